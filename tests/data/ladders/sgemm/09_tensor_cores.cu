// SGEMM ladder, step 09: tensor cores. The block tile is computed with WMMA 16x16x8 TF32
// fragments (one warp per 16x16 output tile, operands staged in shared memory) instead of
// scalar FMAs.
// moves: pattern.tensor_cores = yes
#include <mma.h>
using namespace nvcuda;

#define TILE 16
#define KT 8
#define WARPS 4

__global__ void sgemm_wmma(int M, int N, int K, float alpha, const float* A, const float* B,
                           float beta, float* C) {
    __shared__ float As[WARPS][TILE * KT];
    __shared__ float Bs[KT * TILE];
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int row0 = (blockIdx.y * WARPS + warp) * TILE;
    const int col0 = blockIdx.x * TILE;
    wmma::fragment<wmma::matrix_a, TILE, TILE, KT, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, TILE, TILE, KT, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, TILE, TILE, KT, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 < K; k0 += KT) {
        for (int e = lane; e < TILE * KT; e += 32)
            As[warp][e] = A[(row0 + e / KT) * K + k0 + e % KT];
        for (int e = threadIdx.x; e < KT * TILE; e += 32 * WARPS)
            Bs[e] = B[(k0 + e / TILE) * N + col0 + e % TILE];
        __syncthreads();
        wmma::load_matrix_sync(fa, As[warp], KT);
        wmma::load_matrix_sync(fb, Bs, TILE);
        for (int t = 0; t < fa.num_elements; ++t) fa.x[t] = wmma::__float_to_tf32(fa.x[t]);
        for (int t = 0; t < fb.num_elements; ++t) fb.x[t] = wmma::__float_to_tf32(fb.x[t]);
        wmma::mma_sync(acc, fa, fb, acc);
        __syncthreads();
    }
    wmma::fragment<wmma::accumulator, TILE, TILE, KT, float> cf;
    wmma::load_matrix_sync(cf, C + row0 * N + col0, N, wmma::mem_row_major);
    for (int t = 0; t < cf.num_elements; ++t) cf.x[t] = alpha * acc.x[t] + beta * cf.x[t];
    wmma::store_matrix_sync(C + row0 * N + col0, cf, N, wmma::mem_row_major);
}

void launch(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
            float* C) {
    dim3 grid(N / TILE, M / (TILE * WARPS));
    sgemm_wmma<<<grid, 32 * WARPS>>>(M, N, K, alpha, A, B, beta, C);
}
