"""Elementwise product of two vectors (a size that is not a multiple of any block size)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """out = a * b."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a * b


size = 5003


def get_inputs():
    return [torch.randn(size), torch.randn(size)]


def get_init_inputs():
    return []
