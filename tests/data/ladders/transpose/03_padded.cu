// Transpose ladder, step 03: bank-conflict padding. One extra column ([32][33]) shifts every
// row by one bank, so a column read touches 32 different banks.
// moves: smem.bank_conflicts down
// moves: smem.padded = true
#define TILE 32

__global__ void transpose_padded(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}

void launch(const float* in, float* out, int n) {
    dim3 block(TILE, TILE);
    dim3 grid(n / TILE, n / TILE);
    transpose_padded<<<grid, block>>>(in, out, n);
}
