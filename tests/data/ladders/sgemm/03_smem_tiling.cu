// SGEMM ladder, step 03: shared-memory cache blocking. Each block stages a 32x32 tile of A
// and of B in shared memory and every staged element is read 32 times from there. The
// operand pointers are advanced to the block's tile first (A += cRow * BS * K).
// moves: pattern.reuse = smem_tiling
// moves: smem.reads_per_staged up
#define BS 32

__global__ void sgemm_smem(int M, int N, int K, float alpha, const float* A, const float* B,
                           float beta, float* C) {
    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    __shared__ float As[BS * BS];
    __shared__ float Bs[BS * BS];
    const int tRow = threadIdx.x / BS;
    const int tCol = threadIdx.x % BS;
    A += cRow * BS * K;
    B += cCol * BS;
    C += cRow * BS * N + cCol * BS;
    float acc = 0.0f;
    for (int bk = 0; bk < K; bk += BS) {
        As[tRow * BS + tCol] = A[tRow * K + tCol];
        Bs[tRow * BS + tCol] = B[tRow * N + tCol];
        __syncthreads();
        A += BS;
        B += BS * N;
        for (int d = 0; d < BS; ++d) acc += As[tRow * BS + d] * Bs[d * BS + tCol];
        __syncthreads();
    }
    C[tRow * N + tCol] = alpha * acc + beta * C[tRow * N + tCol];
}

void launch(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
            float* C) {
    dim3 grid(N / BS, M / BS);
    sgemm_smem<<<grid, BS * BS>>>(M, N, K, alpha, A, B, beta, C);
}
