"""WRONG (output cached across calls, in C++): the first call's result is kept in a static
tensor and every later call returns a copy of it, whatever its inputs."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void mul_kernel(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * b[i];
}

torch::Tensor mul_cuda(torch::Tensor a, torch::Tensor b) {
    static torch::Tensor first;
    if (!first.defined()) {
        first = torch::empty_like(a);
        const int n = a.numel();
        mul_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                             first.data_ptr<float>(), n);
    }
    return first.clone();
}
"""

mul = load_inline(name="kb_mul_cached", cpp_sources="torch::Tensor mul_cuda(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=cuda_source, functions=["mul_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return mul.mul_cuda(a, b)
