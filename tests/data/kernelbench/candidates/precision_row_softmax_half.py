"""Planted precision downgrade: row softmax with the exponentials computed and stored in
__half (hexp), the row sum in float. Passes KernelBench's flat 1e-2 (the magnitude guard
included); fails the precision check."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

softmax_source = r"""
#include <torch/extension.h>
#include <cuda_fp16.h>

#define THREADS 128

__global__ void row_softmax_half(const float* x, float* y, int cols) {
    __shared__ float red[THREADS];
    const float* row = x + (long)blockIdx.x * cols;
    float* out = y + (long)blockIdx.x * cols;
    int t = threadIdx.x;

    float m = -INFINITY;
    for (int j = t; j < cols; j += THREADS) m = fmaxf(m, row[j]);
    red[t] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = fmaxf(red[t], red[t + s]);
        __syncthreads();
    }
    __half row_max = __float2half(red[0]);
    __syncthreads();

    float sum = 0.0f;
    for (int j = t; j < cols; j += THREADS) sum += __half2float(hexp(__float2half(row[j]) - row_max));
    red[t] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = red[t] + red[t + s];
        __syncthreads();
    }
    float total = red[0];

    for (int j = t; j < cols; j += THREADS)
        out[j] = __half2float(hexp(__float2half(row[j]) - row_max)) / total;
}

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2, "expects a matrix");
    auto y = torch::empty_like(x);
    row_softmax_half<<<x.size(0), THREADS>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
"""

ext = load_inline(name="kb_softmax_half", cpp_sources="torch::Tensor softmax_rows(torch::Tensor x);",
                  cuda_sources=softmax_source, functions=["softmax_rows"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_rows(x.contiguous())
