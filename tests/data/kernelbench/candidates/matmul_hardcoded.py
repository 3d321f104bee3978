"""WRONG (hard-coded size): the output is allocated for the problem's N = 1024 as written,
whatever the inputs' sizes; it passes only at exactly that size."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

#define N_FIXED 1024

__global__ void matmul_naive(const float* A, const float* B, float* C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
        C[row * N_FIXED + col] = acc;
    }
}

torch::Tensor matmul(torch::Tensor A, torch::Tensor B) {
    int n = A.size(0);
    auto C = torch::zeros({N_FIXED, N_FIXED}, A.options());
    dim3 block(16, 16);
    dim3 grid((n + 15) / 16, (n + 15) / 16);
    matmul_naive<<<grid, block>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), n);
    return C;
}
"""

ext = load_inline(name="kb_matmul_fixed", cpp_sources="torch::Tensor matmul(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=source, functions=["matmul"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.matmul(A, B)
