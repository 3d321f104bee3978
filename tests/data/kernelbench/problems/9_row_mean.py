"""Mean of each row of a matrix (a reduction whose outputs are small: KernelBench's 48)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """out[i] = mean_j x[i, j]."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.mean(x, dim=1)


batch_size = 16
dim = 4000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
