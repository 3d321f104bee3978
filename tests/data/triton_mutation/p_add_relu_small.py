"""relu(a + b) over a short vector (one program per element stays cheap in the interpreter)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.relu(a + b)


size = 300


def get_inputs():
    return [torch.randn(size), torch.randn(size)]


def get_init_inputs():
    return []
