"""ReLU of one vector (larger than the CPU path's work budget, so profiles shrink it)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """out = max(x, 0)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


size = 1048576


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
