"""WRONG (uninitialised output read): the output comes from torch::empty and each row's thread
accumulates into it with `+=`, reading memory nothing wrote (zeros only by luck on a GPU)."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

__global__ void row_sum_serial(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        for (int j = 0; j < cols; ++j) out[r] += x[(long)r * cols + j];
    }
}

torch::Tensor sum_rows(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options());
    int rows = x.size(0);
    row_sum_serial<<<(rows + 63) / 64, 64>>>(x.data_ptr<float>(), out.data_ptr<float>(), rows,
                                             x.size(1));
    return out;
}
"""

ext = load_inline(name="kb_rowsum_uninit", cpp_sources="torch::Tensor sum_rows(torch::Tensor x);",
                  cuda_sources=source, functions=["sum_rows"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sum_rows(x.contiguous())
