"""Correct: row sums, one block per row, a shared-memory tree reduction."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

__global__ void row_sum(const float* x, float* out, int cols) {
    __shared__ float part[256];
    int t = threadIdx.x;
    float acc = 0.0f;
    for (int j = t; j < cols; j += blockDim.x) acc += x[(long)blockIdx.x * cols + j];
    part[t] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = part[0];
}

torch::Tensor sum_rows(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options());
    row_sum<<<x.size(0), 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
    return out;
}
"""

ext = load_inline(name="kb_rowsum", cpp_sources="torch::Tensor sum_rows(torch::Tensor x);",
                  cuda_sources=source, functions=["sum_rows"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sum_rows(x.contiguous())
