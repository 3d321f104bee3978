"""Correct, pure torch: relu(2x + 1) * x - 0.5 as a mask product, with operators only."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        z = x * 2.0 + 1.0
        return z * (z > 0) * x - 0.5
