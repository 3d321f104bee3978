"""A fused elementwise chain: relu(2x + 1) * x - 0.5."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """out = relu(x * 2 + 1) * x - 0.5."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0) * x - 0.5


batch_size = 8
dim = 777


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
