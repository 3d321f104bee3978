// Transpose ladder, step 02: shared-memory tile. A 32x32 tile is read with coalesced loads,
// transposed through shared memory, and written with coalesced stores. Reading the tile
// column-wise makes its 32 lanes hit one shared-memory bank.
// moves: pattern.global_access = coalesced
// moves: smem.bank_conflicts up
#define TILE 32

__global__ void transpose_smem(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE];
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
    transpose_smem<<<grid, block>>>(in, out, n);
}
