// Transpose ladder, step 06: launch bounds. __launch_bounds__(256, 4) tells the compiler the
// block size and a target of 4 resident blocks per SM, capping registers per thread.
// moves: kernel.launch_bounds up
#define TILE 32
#define ROWS 8

__global__ void __launch_bounds__(TILE * ROWS, 4)
transpose_lb(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        tile[threadIdx.y + j][threadIdx.x] = __ldg(&in[(y + j) * n + x]);
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

void launch(const float* in, float* out, int n) {
    dim3 block(TILE, ROWS);
    dim3 grid(n / TILE, n / TILE);
    transpose_lb<<<grid, block>>>(in, out, n);
}
