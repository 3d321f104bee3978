# An LLM-style KernelBench candidate (fixture for the embedded-mutation tests).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>

__global__ void scale_kernel(torch::PackedTensorAccessor32<float, 2, torch::RestrictPtrTraits> x,
                             torch::PackedTensorAccessor32<float, 2, torch::RestrictPtrTraits> y, float s) {
    int i = blockIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x.size(0) && j < x.size(1)) y[i][j] = x[i][j] * s;
}

torch::Tensor scale_cuda(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    const int threads = 256;
    dim3 grid((x.size(1) + threads - 1) / threads, x.size(0));
    scale_kernel<<<grid, threads>>>(x.packed_accessor32<float, 2, torch::RestrictPtrTraits>(),
                                    y.packed_accessor32<float, 2, torch::RestrictPtrTraits>(), (float)s);
    return y;
}
"""

cpp_source = "torch::Tensor scale_cuda(torch::Tensor x, double s);"

ext = load_inline(
    name="accessor_scale",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["scale_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ext = ext

    def forward(self, *args):
        return self.ext.scale_cuda(*args)
