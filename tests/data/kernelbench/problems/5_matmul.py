"""Matrix product C = A @ B of non-square, non-tile-multiple sizes."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 70
K = 45
N = 83


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
