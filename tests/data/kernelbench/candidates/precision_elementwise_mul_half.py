"""Planted precision downgrade: a float32 elementwise product computed with __hmul on the
inputs rounded to __half. Passes KernelBench's flat 1e-2; fails the precision check."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_fp16.h>

__global__ void mul_half(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __half2float(__hmul(__float2half(a[i]), __float2half(b[i])));
}

torch::Tensor mul_cuda(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.sizes() == b.sizes(), "shapes differ");
    auto out = torch::empty_like(a);
    const int n = a.numel();
    mul_half<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                       out.data_ptr<float>(), n);
    return out;
}
"""

mul = load_inline(name="kb_mul_half", cpp_sources="torch::Tensor mul_cuda(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=cuda_source, functions=["mul_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return mul.mul_cuda(a.contiguous(), b.contiguous())
