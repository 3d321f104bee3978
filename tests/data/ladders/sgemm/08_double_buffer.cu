// SGEMM ladder, step 08: double buffering. Two shared-memory stages: while the block
// computes on stage `cur`, the next tile is loaded into registers and then stored into the
// other stage, so one barrier per tile separates loads from compute.
// moves: pipeline.double_buffered = true
// moves: pipeline.stages up
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS 256

__global__ void __launch_bounds__(NTHREADS)
sgemm_db(int M, int N, int K, float alpha, float* A, float* B, float beta, float* C) {
    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    const int tCol = threadIdx.x % (BN / TN);
    const int tRow = threadIdx.x / (BN / TN);
    __shared__ float As[2][BK * BM];
    __shared__ float Bs[2][BK * BN];
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
    float4 a4 = reinterpret_cast<float4*>(&A[aRow * K + aCol * 4])[0];
    float4 b4 = reinterpret_cast<float4*>(&B[bRow * N + bCol * 4])[0];
    int cur = 0;
    As[0][(aCol * 4 + 0) * BM + aRow] = a4.x;
    As[0][(aCol * 4 + 1) * BM + aRow] = a4.y;
    As[0][(aCol * 4 + 2) * BM + aRow] = a4.z;
    As[0][(aCol * 4 + 3) * BM + aRow] = a4.w;
    reinterpret_cast<float4*>(&Bs[0][bRow * BN + bCol * 4])[0] = b4;
    __syncthreads();
    for (int bk = 0; bk < K; bk += BK) {
        const bool more = bk + BK < K;
        if (more) {
            a4 = reinterpret_cast<float4*>(&A[aRow * K + aCol * 4 + BK])[0];
            b4 = reinterpret_cast<float4*>(&B[(bRow + BK) * N + bCol * 4])[0];
        }
        for (int d = 0; d < BK; ++d) {
            for (int i = 0; i < TM; ++i) regM[i] = As[cur][d * BM + tRow * TM + i];
            for (int j = 0; j < TN; ++j) regN[j] = Bs[cur][d * BN + tCol * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) res[i * TN + j] += regM[i] * regN[j];
        }
        if (more) {
            const int nxt = cur ^ 1;
            As[nxt][(aCol * 4 + 0) * BM + aRow] = a4.x;
            As[nxt][(aCol * 4 + 1) * BM + aRow] = a4.y;
            As[nxt][(aCol * 4 + 2) * BM + aRow] = a4.z;
            As[nxt][(aCol * 4 + 3) * BM + aRow] = a4.w;
            reinterpret_cast<float4*>(&Bs[nxt][bRow * BN + bCol * 4])[0] = b4;
            cur = nxt;
            A += BK;
            B += BK * N;
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
    dim3 grid(N / BN, M / BM);
    sgemm_db<<<grid, NTHREADS>>>(M, N, K, alpha, A, B, beta, C);
}
