// Transpose ladder (n x n floats), step 01: naive. Reads are coalesced along a row; writes
// land one column apart, so every lane of a warp writes a different row of the output.
__global__ void transpose_naive(const float* in, float* out, int n) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < n && y < n) out[x * n + y] = in[y * n + x];
}

void launch(const float* in, float* out, int n) {
    dim3 block(32, 8);
    dim3 grid((n + 31) / 32, (n + 7) / 8);
    transpose_naive<<<grid, block>>>(in, out, n);
}
