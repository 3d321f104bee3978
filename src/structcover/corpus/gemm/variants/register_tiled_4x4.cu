// variant: 64x64 block tile, BK=16 smem stages, 16x16 threads each accumulating a 4x4 register tile.
#include <cuda_runtime.h>

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#define THREADS 256

__global__ void gemm_register_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[BM][BK + 1];
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * 16 + tx;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // 64x16 A elements and 16x64 B elements, 4 of each per thread.
        for (int l = 0; l < (BM * BK) / THREADS; ++l) {
            const int idx = tid + l * THREADS;
            const int r = idx / BK, k = idx % BK;
            As[r][k] = (row0 + r < M && k0 + k < K) ? A[(row0 + r) * K + k0 + k] : 0.0f;
        }
        for (int l = 0; l < (BK * BN) / THREADS; ++l) {
            const int idx = tid + l * THREADS;
            const int k = idx / BN, c = idx % BN;
            Bs[k][c] = (k0 + k < K && col0 + c < N) ? B[(k0 + k) * N + col0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[ty + 16 * i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + ty + 16 * i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + tx + 16 * j;
            if (r < M && c < N) C[r * N + c] = acc[i][j];
        }
    }
}

extern "C" int launch(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_register_tiled<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
