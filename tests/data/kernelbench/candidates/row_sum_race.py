"""WRONG (a race): every thread adds its partial sum to the row's output with a plain `+=`,
no atomic and no reduction: concurrent read-modify-writes of one address lose updates."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

__global__ void row_sum_racy(const float* x, float* out, int cols) {
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) acc += x[(long)blockIdx.x * cols + j];
    out[blockIdx.x] += acc;
}

torch::Tensor sum_rows(torch::Tensor x) {
    auto out = torch::zeros({x.size(0)}, x.options());
    row_sum_racy<<<x.size(0), 128>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
    return out;
}
"""

ext = load_inline(name="kb_rowsum_race", cpp_sources="torch::Tensor sum_rows(torch::Tensor x);",
                  cuda_sources=source, functions=["sum_rows"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sum_rows(x.contiguous())
