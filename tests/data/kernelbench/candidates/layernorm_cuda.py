"""Correct: layer norm, one block per row (mean and variance reduced in shared memory); the
parameters are created exactly as the reference creates them, so both draw the same values."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

__global__ void layernorm_rows(const float* x, const float* w, const float* b, float* y,
                               int cols, float eps) {
    __shared__ float red[128];
    const float* row = x + (long)blockIdx.x * cols;
    int t = threadIdx.x;
    float s = 0.0f;
    for (int j = t; j < cols; j += 128) s += row[j];
    red[t] = s;
    __syncthreads();
    for (int k = 64; k > 0; k >>= 1) {
        if (t < k) red[t] += red[t + k];
        __syncthreads();
    }
    float mean = red[0] / cols;
    __syncthreads();
    float v = 0.0f;
    for (int j = t; j < cols; j += 128) {
        float d = row[j] - mean;
        v += d * d;
    }
    red[t] = v;
    __syncthreads();
    for (int k = 64; k > 0; k >>= 1) {
        if (t < k) red[t] += red[t + k];
        __syncthreads();
    }
    float inv = rsqrtf(red[0] / cols + eps);
    for (int j = t; j < cols; j += 128) {
        y[(long)blockIdx.x * cols + j] = (row[j] - mean) * inv * w[j] + b[j];
    }
}

torch::Tensor layernorm(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    auto y = torch::empty_like(x);
    int cols = x.size(-1);
    int rows = x.numel() / cols;
    layernorm_rows<<<rows, 128>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                  y.data_ptr<float>(), cols, (float)eps);
    return y;
}
"""

ext = load_inline(
    name="kb_layernorm",
    cpp_sources="torch::Tensor layernorm(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);",
    cuda_sources=source,
    functions=["layernorm"],
)


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))
        self.eps = eps

    def forward(self, x):
        return ext.layernorm(x.contiguous(), self.weight, self.bias, self.eps)
