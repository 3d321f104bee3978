// SGEMM ladder, step 06: vectorized memory access. Global loads and the C update move four
// floats per instruction (float4); A is transposed while it is stored to shared memory so the
// inner loop reads it with unit stride.
// moves: mem.vector_width_global up
// moves: pattern.vector_width = 4
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN))
sgemm_vec(int M, int N, int K, float alpha, float* A, float* B, float beta, float* C) {
    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    const int tCol = threadIdx.x % (BN / TN);
    const int tRow = threadIdx.x / (BN / TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;
    const int aRow = threadIdx.x / (BK / 4);
    const int aCol = threadIdx.x % (BK / 4);
    const int bRow = threadIdx.x / (BN / 4);
    const int bCol = threadIdx.x % (BN / 4);
    float res[TM * TN] = {0.0f};
    float regM[TM];
    float regN[TN];
    for (int bk = 0; bk < K; bk += BK) {
        float4 a4 = reinterpret_cast<float4*>(&A[aRow * K + aCol * 4])[0];
        As[(aCol * 4 + 0) * BM + aRow] = a4.x;
        As[(aCol * 4 + 1) * BM + aRow] = a4.y;
        As[(aCol * 4 + 2) * BM + aRow] = a4.z;
        As[(aCol * 4 + 3) * BM + aRow] = a4.w;
        reinterpret_cast<float4*>(&Bs[bRow * BN + bCol * 4])[0] =
            reinterpret_cast<float4*>(&B[bRow * N + bCol * 4])[0];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int d = 0; d < BK; ++d) {
            for (int i = 0; i < TM; ++i) regM[i] = As[d * BM + tRow * TM + i];
            for (int j = 0; j < TN; ++j) regN[j] = Bs[d * BN + tCol * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) res[i * TN + j] += regM[i] * regN[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; j += 4) {
            float4 c = reinterpret_cast<float4*>(&C[(tRow * TM + i) * N + tCol * TN + j])[0];
            c.x = alpha * res[i * TN + j + 0] + beta * c.x;
            c.y = alpha * res[i * TN + j + 1] + beta * c.y;
            c.z = alpha * res[i * TN + j + 2] + beta * c.z;
            c.w = alpha * res[i * TN + j + 3] + beta * c.w;
            reinterpret_cast<float4*>(&C[(tRow * TM + i) * N + tCol * TN + j])[0] = c;
        }
}

void launch(int M, int N, int K, float alpha, float* A, float* B, float beta, float* C) {
    dim3 grid(N / 128, M / 128);
    sgemm_vec<128, 128, 8, 8, 8><<<grid, 256>>>(M, N, K, alpha, A, B, beta, C);
}
