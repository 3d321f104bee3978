"""WRONG on a GPU (work on a side stream): the kernel is queued on a stream from torch's pool and the
call returns at once; the caller's stream, and the events that time it, never wait for it. On
the CPU path every launch is synchronous, so this one passes there: the run-time check that
catches it (outputs change after the caller's stream is done) needs a device."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void slow_mul(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = a[i];
        for (int k = 0; k < 20000; ++k) v = v * 0.99999f + 0.00001f * a[i];
        out[i] = v * b[i];
    }
}

torch::Tensor mul_async(torch::Tensor a, torch::Tensor b) {
    cudaStream_t side = c10::cuda::getStreamFromPool().stream();
    auto out = torch::zeros_like(a);
    const int n = a.numel();
    slow_mul<<<(n + 255) / 256, 256, 0, side>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                 out.data_ptr<float>(), n);
    return out;
}
"""

mul = load_inline(name="kb_mul_side", cpp_sources="torch::Tensor mul_async(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=cuda_source, functions=["mul_async"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return mul.mul_async(a, b)
