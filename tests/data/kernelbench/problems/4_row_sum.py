"""Sum of each row of a matrix (a reduction)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """out[i] = sum_j x[i, j]."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)


batch_size = 32
dim = 1531


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
