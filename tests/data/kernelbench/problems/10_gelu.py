"""GELU (exact, erf form) of a batch of vectors, as KernelBench's 26_GELU_."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """out = gelu(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.gelu(x)


batch_size = 16
dim = 3001


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
