"""WRONG (the heavy op in torch): a CUDA kernel is defined and even called, but the product
itself is torch.matmul; the kernel only copies."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

__global__ void copy_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

torch::Tensor copy(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    copy_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

ext = load_inline(name="kb_copy", cpp_sources="torch::Tensor copy(torch::Tensor x);",
                  cuda_sources=source, functions=["copy"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.copy(torch.matmul(A, B))
