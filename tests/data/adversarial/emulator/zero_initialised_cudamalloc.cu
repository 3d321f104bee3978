// task: sum
// expect: wrong, race
// Accumulates into a fresh cudaMalloc buffer without clearing it: cudaMalloc memory is not zero
// on a GPU (an emulator whose allocations come fresh from the OS is).
#include <cuda_runtime.h>
__global__ void sum(const float* x, float* acc, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(acc, x[i]);
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    float* acc;
    cudaMalloc(&acc, 1 << 26);  // 64 MiB: fresh pages from the OS under glibc
    sum<<<(n + 255) / 256, 256, 0, s>>>(x, acc, n);
    cudaMemcpy(out, acc, sizeof(float), cudaMemcpyDeviceToDevice);
    cudaFree(acc);
    return (int)cudaGetLastError();
}
