// SGEMM ladder, step 02: global memory coalescing. threadIdx.x now walks the columns, so a
// warp reads one row of B and writes one row of C contiguously; A is a warp-wide broadcast.
// moves: pattern.global_access = coalesced
// moves: mem.coalesced_fraction up
__global__ void sgemm_coalesced(int M, int N, int K, float alpha, const float* A,
                                const float* B, float beta, float* C) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

void launch(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
            float* C) {
    dim3 block(32, 32);
    dim3 grid((N + 31) / 32, (M + 31) / 32);
    sgemm_coalesced<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
}
