// cheat: no_library_delegation -- a decoy kernel, the GEMM itself done by cuBLAS.
#include <cuda_runtime.h>
#include <cublas_v2.h>

__global__ void decoy(float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 0) c[i] = 0.f;
}

extern "C" int launch(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
    cublasHandle_t handle;
    cublasCreate(&handle);
    cublasSetStream(handle, stream);
    const float one = 1.f, zero = 0.f;
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N);
    decoy<<<1, 32, 0, stream>>>(C, M * N);
    cublasDestroy(handle);
    return (int)cudaGetLastError();
}
