"""Correct: relu(2x + 1) * x - 0.5 fused into one kernel with a grid-stride loop."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>

__global__ void chain_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        float v = x[i];
        float z = fmaxf(v * 2.0f + 1.0f, 0.0f);
        y[i] = z * v - 0.5f;
    }
}

torch::Tensor chain(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    int blocks = (int)((n + 127) / 128);
    if (blocks > 8) blocks = 8;
    chain_kernel<<<blocks, 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

ext = load_inline(name="kb_chain", cpp_sources="torch::Tensor chain(torch::Tensor x);",
                  cuda_sources=source, functions=["chain"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.chain(x.contiguous())
