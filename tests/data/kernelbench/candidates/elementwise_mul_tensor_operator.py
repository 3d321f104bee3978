"""Cheat: the extension launches a kernel that writes its own output, then returns torch's
`a * b` spelled as the tensor operator in C++ (a text check cannot tell tensors from scalars
without types: a known hole of the text layer); the run-time dispatch watch sees aten.mul."""
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
    mul_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                         out.data_ptr<float>(), n);
    auto product = a * b;
    return product;
}
"""

mul = load_inline(name="kb_mul_operator", cpp_sources="torch::Tensor mul_cuda(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=cuda_source, functions=["mul_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return mul.mul_cuda(a.contiguous(), b.contiguous())
