"""Small hand-written kernels that pin individual features (shared by the feature tests)."""

COALESCED = r"""
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

STRIDED = r"""
__global__ void gather(const float* a, float* c, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i * stride];
}
"""

INDIRECT = r"""
__global__ void gather(const float* a, const int* idx, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[idx[i]];
}
"""

# docs/FEATURES.md: m[c*rows + r] with r = blockIdx.x*blockDim.x + threadIdx.x is coalesced,
# m[r*cols + c] strided.
COLUMN_MAJOR = r"""
__global__ void colsum(const float* m, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
    for (int c = 0; c < cols; ++c) s += m[c * rows + r];
    out[r] = s;
}
"""

ROW_MAJOR = r"""
__global__ void rowsum(const float* m, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
    for (int c = 0; c < cols; ++c) s += m[r * cols + c];
    out[r] = s;
}
"""

BROADCAST = r"""
__global__ void scale(const float* alpha, float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    x[i] = x[i] * alpha[0] + alpha[blockIdx.x];
}
"""

UNKNOWN = r"""
__device__ int hash(int x);
__global__ void scatter(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    x[hash(i)] = 1.0f;
}
"""

TILED_GEMM = r"""
#define TILE 16
__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B, float* C, int N) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < N / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = A[row * N + t * TILE + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * N + col];
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * N + col] = acc;
}
extern "C" int launch(const float* A, const float* B, float* C, int N, cudaStream_t stream) {
    dim3 block(TILE, TILE);
    dim3 grid(N / TILE, N / TILE);
    sgemm<<<grid, block, 0, stream>>>(A, B, C, N);
    return (int)cudaGetLastError();
}
"""

NAIVE_GEMM = r"""
__global__ void sgemm(const float* A, const float* B, float* C, int N) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""

WARP_REDUCE = r"""
__inline__ __device__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffff, v, off);
    return v;
}
__global__ void reduce(const float* x, float* out, int n) {
    float v = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        v += x[i];
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
"""

SHARED_REDUCE = r"""
__global__ void reduce(const float* in, float* out, int n) {
    __shared__ float sdata[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = i < n ? in[i] : 0.f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) { atomicAdd(&out[0], sdata[0]); }
}
"""

TRANSPOSE_NAIVE = r"""
__global__ void transpose(const float* in, float* out, int rows, int cols) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
}
"""

TRANSPOSE_TILED = r"""
#define T 32
__global__ void transpose(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[T][T + 1];
    int x = blockIdx.x * T + threadIdx.x;
    int y = blockIdx.y * T + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * T + threadIdx.x;
    y = blockIdx.x * T + threadIdx.y;
    out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
"""

VECTOR = r"""
__global__ void copy4(const float* __restrict__ a, float* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = reinterpret_cast<const float4*>(a)[i];
    reinterpret_cast<float4*>(b)[i] = v;
    float4 w = *reinterpret_cast<const float4*>(&a[4 * i]);
    b[0] = w.x + __ldg(&a[i]);
}
"""

MISC = r"""
#include <mma.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
using namespace nvcuda;
extern __shared__ float dyn[];
__global__ void misc(float* g, int n) {
    __shared__ int counts[32];
    cg::thread_block block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    unsigned m = __ballot_sync(0xffffffff, g[threadIdx.x] > 0);
    if (__any_sync(0xffffffff, m)) atomicAdd(&counts[threadIdx.x % 32], 1);
    __syncwarp();
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(0), "l"(g));
    dyn[threadIdx.x] = g[threadIdx.x];
    block.sync();
    g[threadIdx.x] = dyn[threadIdx.x] + counts[0];
}
"""

HOST_LIBRARY = r"""
#include <cublas_v2.h>
extern "C" int launch(const float* A, const float* B, float* C, int N, cudaStream_t stream) {
    cublasHandle_t h;
    cublasCreate(&h);
    float one = 1.f, zero = 0.f;
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, B, N, A, N, &zero, C, N);
    cudaGraph_t graph;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    return 0;
}
"""

TORCH = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b).relu()
"""

TRITON = """
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs), mask=offs < n)
"""

LOAD_INLINE = '''
import torch
from torch.utils.cpp_extension import load_inline

cuda_src = """
__global__ void relu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}
"""
mod = load_inline(name="relu", cpp_sources="", cuda_sources=cuda_src)
'''
