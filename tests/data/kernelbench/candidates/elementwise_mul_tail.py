"""WRONG (skipped tail): the grid is n / 256 blocks, rounded down, so the last n % 256 elements
are never computed (here 5003 % 256 = 139 of them)."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void mul_kernel(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * b[i];
}

torch::Tensor mul_cuda(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    const int n = a.numel();
    mul_kernel<<<n / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                 out.data_ptr<float>(), n);
    return out;
}
"""

mul = load_inline(name="kb_mul_tail", cpp_sources="torch::Tensor mul_cuda(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=cuda_source, functions=["mul_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return mul.mul_cuda(a, b)
