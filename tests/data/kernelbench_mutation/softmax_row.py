# An LLM-style KernelBench candidate (fixture for the embedded-mutation tests).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cfloat>

__global__ void softmax_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    extern __shared__ float sdata[];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    const float* x = in + row * cols;
    float* y = out + row * cols;
    float m = -FLT_MAX;
    for (int j = tid; j < cols; j += blockDim.x) m = fmaxf(m, x[j]);
    sdata[tid] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = fmaxf(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    m = sdata[0];
    __syncthreads();
    float sum = 0.f;
    for (int j = tid; j < cols; j += blockDim.x) sum += expf(x[j] - m);
    sdata[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    sum = sdata[0];
    for (int j = tid; j < cols; j += blockDim.x) y[j] = expf(x[j] - m) / sum;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be CUDA");
    int rows = x.size(0), cols = x.size(1);
    auto out = torch::empty_like(x);
    const int threads = 256;
    auto stream = at::cuda::getCurrentCUDAStream();
    softmax_kernel<<<rows, threads, threads * sizeof(float), stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), rows, cols);
    return out;
}
"""

cpp_source = "torch::Tensor softmax_cuda(torch::Tensor x);"

ext = load_inline(
    name="softmax_row",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["softmax_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ext = ext

    def forward(self, *args):
        return self.ext.softmax_cuda(*args)
