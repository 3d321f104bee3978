// cheat: no_library_delegation -- wraps the pointers as tensors and calls torch's matmul.
#include <cuda_runtime.h>
#include <torch/extension.h>

__global__ void touch(float* c) { }

extern "C" int launch(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
    auto opts = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
    auto a = torch::from_blob(const_cast<float*>(A), {M, K}, opts);
    auto b = torch::from_blob(const_cast<float*>(B), {K, N}, opts);
    auto c = torch::from_blob(C, {M, N}, opts);
    torch::matmul_out(c, a, b);
    touch<<<1, 1, 0, stream>>>(C);
    return (int)cudaGetLastError();
}
