"""Planted precision downgrade: row means accumulated entirely in __half (per-thread partial
sums and the shared-memory tree), divided in float at the end. Its error, ~1e-3 of the
output, passes KernelBench's flat 1e-2 (magnitude guard included); the precision check
fails it."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <cuda_fp16.h>

__global__ void row_mean_half(const float* x, float* out, int cols) {
    __shared__ __half part[256];
    int t = threadIdx.x;
    __half acc = __float2half(0.0f);
    for (int j = t; j < cols; j += blockDim.x)
        acc = __hadd(acc, __float2half(x[(long)blockIdx.x * cols + j]));
    part[t] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) part[t] = __hadd(part[t], part[t + s]);
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = __half2float(part[0]) / (float)cols;
}

torch::Tensor mean_rows(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options());
    row_mean_half<<<x.size(0), 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
    return out;
}
"""

ext = load_inline(name="kb_rowmean_half", cpp_sources="torch::Tensor mean_rows(torch::Tensor x);",
                  cuda_sources=source, functions=["mean_rows"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.mean_rows(x.contiguous())
