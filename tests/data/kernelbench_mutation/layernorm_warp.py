# An LLM-style KernelBench candidate (fixture for the embedded-mutation tests).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}

__global__ void layernorm_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, float eps) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float s = 0.f, ss = 0.f;
    for (int j = lane; j < cols; j += 32) { float v = xr[j]; s += v; ss += v * v; }
    s = warp_sum(s); ss = warp_sum(ss);
    s = __shfl_sync(0xffffffff, s, 0); ss = __shfl_sync(0xffffffff, ss, 0);
    float mean = s / cols;
    float inv = rsqrtf(ss / cols - mean * mean + eps);
    for (int j = lane; j < cols; j += 32) y[(size_t)row * cols + j] = (xr[j] - mean) * inv;
}

torch::Tensor layernorm_cuda(torch::Tensor x, double eps) {
    const at::cuda::OptionalCUDAGuard guard(device_of(x));
    int rows = x.size(0), cols = x.size(1);
    auto y = torch::empty_like(x);
    int threads = 256;
    int blocks = (rows + 7) / 8;
    layernorm_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols, (float)eps);
    return y;
}
"""

cpp_source = "torch::Tensor layernorm_cuda(torch::Tensor x, double eps);"

ext = load_inline(
    name="layernorm_warp",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["layernorm_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ext = ext

    def forward(self, *args):
        return self.ext.layernorm_cuda(*args)
