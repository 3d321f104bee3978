// SGEMM ladder, step 01: naive. One thread per C element; threadIdx.x walks the rows,
// so neighbouring lanes read A and write C one row (K or N floats) apart.
// C = alpha * A(MxK) * B(KxN) + beta * C, row-major.
__global__ void sgemm_naive(int M, int N, int K, float alpha, const float* A,
                            const float* B, float beta, float* C) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

void launch(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
            float* C) {
    dim3 block(32, 32);
    dim3 grid((M + 31) / 32, (N + 31) / 32);
    sgemm_naive<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
}
