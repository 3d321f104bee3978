"""Correct, pure torch: the product with operators (no custom kernel, no heavy torch op)."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a * b
