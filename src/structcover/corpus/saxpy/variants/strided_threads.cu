// variant: fixed grid where lane l of warp w handles base + l*W + w (neighbouring lanes W floats apart: uncoalesced, slow).
#include <cuda_runtime.h>

// Thread (w, l) = (warp, lane) handles elements l*W + w, so neighbouring lanes touch addresses W floats
// apart: every element is covered once, yet each warp access is scattered.
__global__ void saxpy_transposed_map(const float* x, float* y, float a, int n, int num_warps) {
    const int gtid = blockIdx.x * blockDim.x + threadIdx.x;
    const int warp = gtid / 32;
    const int lane = gtid % 32;
    for (int base = 0; base < n; base += num_warps * 32) {
        const int i = base + lane * num_warps + warp;
        if (i < n) y[i] = a * x[i] + y[i];
    }
}

extern "C" int launch(const float* x, float* y, float a, int n, cudaStream_t stream) {
    const int block = 256;
    const int grid = 16;
    saxpy_transposed_map<<<grid, block, 0, stream>>>(x, y, a, n, grid * block / 32);
    return (int)cudaGetLastError();
}
