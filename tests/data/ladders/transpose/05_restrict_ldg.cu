// Transpose ladder, step 05: read-only data path. __restrict__ pointers and __ldg loads let
// the compiler route the input through the read-only cache.
// moves: mem.restrict_params up
// moves: mem.ldg up
#define TILE 32
#define ROWS 8

__global__ void transpose_ldg(const float* __restrict__ in, float* __restrict__ out, int n) {
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
    transpose_ldg<<<grid, block>>>(in, out, n);
}
