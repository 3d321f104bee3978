// Softmax ladder, step 02: kernel fusion. The three passes run in one kernel (still one
// thread per row): no intermediate arrays, one launch per forward.
// moves: fusion.launches_per_forward down
// moves: fusion.kernel_stages up
__global__ void softmax_fused(const float* x, float* y, int rows, int cols) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* row = x + r * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, row[c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += expf(row[c] - m);
    for (int c = 0; c < cols; ++c) y[r * cols + c] = expf(row[c] - m) / s;
}

void launch(const float* x, float* y, int rows, int cols) {
    softmax_fused<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
