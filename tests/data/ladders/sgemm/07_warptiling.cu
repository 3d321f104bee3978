// SGEMM ladder, step 07: warptiling. Each warp owns a WM x WN sub-tile of the block tile and
// its lanes iterate over it, so shared-memory reads follow the warp id (threadIdx.x / 32)
// and a warp's operands stay in its own registers.
// moves: warp.tiling = true
#define WARPSIZE 32
#define BM 128
#define BN 128
#define BK 16
#define WM 64
#define WN 64
#define WNITER 4
#define TM 8
#define TN 4
#define NTHREADS 128

__global__ void __launch_bounds__(NTHREADS)
sgemm_warptile(int M, int N, int K, float alpha, float* A, float* B, float beta, float* C) {
    const int cRow = blockIdx.y;
    const int cCol = blockIdx.x;
    const int warpIdx = threadIdx.x / WARPSIZE;
    const int warpCol = warpIdx % (BN / WN);
    const int warpRow = warpIdx / (BN / WN);
    constexpr int WMITER = (WM * WN) / (WARPSIZE * TM * TN * WNITER);
    constexpr int WSUBM = WM / WMITER;
    constexpr int WSUBN = WN / WNITER;
    const int lane = threadIdx.x % WARPSIZE;
    const int tColW = lane % (WSUBN / TN);
    const int tRowW = lane / (WSUBN / TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    A += cRow * BM * K;
    B += cCol * BN;
    C += (cRow * BM + warpRow * WM) * N + cCol * BN + warpCol * WN;
    const int aRow = threadIdx.x / (BK / 4);
    const int aCol = threadIdx.x % (BK / 4);
    constexpr int aStride = (NTHREADS * 4) / BK;
    const int bRow = threadIdx.x / (BN / 4);
    const int bCol = threadIdx.x % (BN / 4);
    constexpr int bStride = NTHREADS / (BN / 4);
    float res[WMITER * TM * WNITER * TN] = {0.0f};
    float regM[WMITER * TM];
    float regN[WNITER * TN];
    for (int bk = 0; bk < K; bk += BK) {
        for (int off = 0; off + aStride <= BM; off += aStride) {
            const float4 t = reinterpret_cast<const float4*>(&A[(aRow + off) * K + aCol * 4])[0];
            As[(aCol * 4 + 0) * BM + aRow + off] = t.x;
            As[(aCol * 4 + 1) * BM + aRow + off] = t.y;
            As[(aCol * 4 + 2) * BM + aRow + off] = t.z;
            As[(aCol * 4 + 3) * BM + aRow + off] = t.w;
        }
        for (int off = 0; off + bStride <= BK; off += bStride)
            reinterpret_cast<float4*>(&Bs[(bRow + off) * BN + bCol * 4])[0] =
                reinterpret_cast<const float4*>(&B[(bRow + off) * N + bCol * 4])[0];
        __syncthreads();
        for (int d = 0; d < BK; ++d) {
            for (int wm = 0; wm < WMITER; ++wm)
                for (int i = 0; i < TM; ++i)
                    regM[wm * TM + i] = As[d * BM + warpRow * WM + wm * WSUBM + tRowW * TM + i];
            for (int wn = 0; wn < WNITER; ++wn)
                for (int j = 0; j < TN; ++j)
                    regN[wn * TN + j] = Bs[d * BN + warpCol * WN + wn * WSUBN + tColW * TN + j];
            for (int wm = 0; wm < WMITER; ++wm)
                for (int wn = 0; wn < WNITER; ++wn)
                    for (int i = 0; i < TM; ++i)
                        for (int j = 0; j < TN; ++j)
                            res[(wm * TM + i) * (WNITER * TN) + wn * TN + j] +=
                                regM[wm * TM + i] * regN[wn * TN + j];
        }
        A += BK;
        B += BK * N;
        __syncthreads();
    }
    for (int wm = 0; wm < WMITER; ++wm)
        for (int wn = 0; wn < WNITER; ++wn)
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; j += 4) {
                    float* p = &C[(wm * WSUBM + tRowW * TM + i) * N + wn * WSUBN + tColW * TN + j];
                    float4 c = reinterpret_cast<float4*>(p)[0];
                    const int r = (wm * TM + i) * (WNITER * TN) + wn * TN + j;
                    c.x = alpha * res[r + 0] + beta * c.x;
                    c.y = alpha * res[r + 1] + beta * c.y;
                    c.z = alpha * res[r + 2] + beta * c.z;
                    c.w = alpha * res[r + 3] + beta * c.w;
                    reinterpret_cast<float4*>(p)[0] = c;
                }
}

void launch(int M, int N, int K, float alpha, float* A, float* B, float beta, float* C) {
    dim3 grid(N / BN, M / BM);
    sgemm_warptile<<<grid, NTHREADS>>>(M, N, K, alpha, A, B, beta, C);
}
