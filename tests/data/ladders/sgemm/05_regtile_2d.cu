// SGEMM ladder, step 05: 2-D register blocktiling. Each thread computes a TM x TN = 8 x 8
// tile of C from register copies of an A column and a B row (outer product per k). The tile
// sizes are template parameters fixed at the launch site.
// moves: reg.outputs_per_thread up
// moves: intensity.flop_per_byte up
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN))
sgemm_2d(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    constexpr int threads = (BM * BN) / (TM * TN);
    const int tCol = threadIdx.x % (BN / TN);
    const int tRow = threadIdx.x / (BN / TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;
    const int aRow = threadIdx.x / BK;
    const int aCol = threadIdx.x % BK;
    constexpr int aStride = threads / BK;
    const int bRow = threadIdx.x / BN;
    const int bCol = threadIdx.x % BN;
    constexpr int bStride = threads / BN;
    float res[TM * TN] = {0.0f};
    float regM[TM];
    float regN[TN];
    for (int bk = 0; bk < K; bk += BK) {
        for (int off = 0; off < BM; off += aStride)
            As[(aRow + off) * BK + aCol] = A[(aRow + off) * K + aCol];
        for (int off = 0; off < BK; off += bStride)
            Bs[(bRow + off) * BN + bCol] = B[(bRow + off) * N + bCol];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int d = 0; d < BK; ++d) {
            for (int i = 0; i < TM; ++i) regM[i] = As[(tRow * TM + i) * BK + d];
            for (int j = 0; j < TN; ++j) regN[j] = Bs[d * BN + tCol * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) res[i * TN + j] += regM[i] * regN[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) {
            const int idx = (tRow * TM + i) * N + tCol * TN + j;
            C[idx] = alpha * res[i * TN + j] + beta * C[idx];
        }
}

void launch(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
            float* C) {
    dim3 grid(N / 128, M / 128);
    sgemm_2d<128, 128, 8, 8, 8><<<grid, 256>>>(M, N, K, alpha, A, B, beta, C);
}
