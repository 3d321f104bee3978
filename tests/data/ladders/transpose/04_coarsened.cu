// Transpose ladder, step 04: thread coarsening. A 32x8 block moves the 32x32 tile, each
// thread copying TILE / ROWS = 4 elements in each direction.
// moves: reg.outputs_per_thread up
// moves: par.coarsening_loops up
#define TILE 32
#define ROWS 8

__global__ void transpose_coarse(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

void launch(const float* in, float* out, int n) {
    dim3 block(TILE, ROWS);
    dim3 grid(n / TILE, n / TILE);
    transpose_coarse<<<grid, block>>>(in, out, n);
}
