"""Layer normalisation over the last dimension, with learned weight and bias."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """out = layer_norm(x) * weight + bias over the last dimension."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))
        self.eps = eps

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


batch_size = 16
dim = 300
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, eps]
