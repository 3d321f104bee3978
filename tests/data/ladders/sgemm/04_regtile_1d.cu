// SGEMM ladder, step 04: 1-D register blocktiling. Each thread computes TM = 8 results of a
// column in a register array; the B value is loaded once into a register and reused TM times.
// moves: reg.outputs_per_thread up
// moves: pattern.reuse = smem_and_register
// moves: pattern.intensity = high
#define BM 64
#define BN 64
#define BK 8
#define TM 8

__global__ void sgemm_1d(int M, int N, int K, float alpha, const float* A, const float* B,
                         float beta, float* C) {
    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    const int tCol = threadIdx.x % BN;
    const int tRow = threadIdx.x / BN;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;
    const int aCol = threadIdx.x % BK;
    const int aRow = threadIdx.x / BK;
    const int bCol = threadIdx.x % BN;
    const int bRow = threadIdx.x / BN;
    float res[TM] = {0.0f};
    for (int bk = 0; bk < K; bk += BK) {
        As[aRow * BK + aCol] = A[aRow * K + aCol];
        Bs[bRow * BN + bCol] = B[bRow * N + bCol];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int d = 0; d < BK; ++d) {
            const float b = Bs[d * BN + tCol];
            for (int r = 0; r < TM; ++r) res[r] += As[(tRow * TM + r) * BK + d] * b;
        }
        __syncthreads();
    }
    for (int r = 0; r < TM; ++r)
        C[(tRow * TM + r) * N + tCol] = alpha * res[r] + beta * C[(tRow * TM + r) * N + tCol];
}

void launch(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
            float* C) {
    dim3 grid(N / BN, M / BM);
    sgemm_1d<<<grid, (BM * BN) / TM>>>(M, N, K, alpha, A, B, beta, C);
}
