import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs a matrix-scalar multiplication (C = A * s)
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, s: float):
        return A * s

M = 65536  # upstream: 16384 * 4 (folded)
N = 16384  # upstream: 4096 * 4 (folded)

def get_inputs():
    A = torch.rand(M, N)
    s = 3.14
    return [A, s]

def get_init_inputs():
    return []  # No special initialization inputs needed
