// Softmax ladder (rows x cols floats, softmax over each row), step 01: three kernels, one
// thread per row: row maxima, then sums of exponentials, then the normalized outputs. Each
// pass re-reads the input from global memory and lanes walk different rows.
__global__ void row_max(const float* x, float* mx, int rows, int cols) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, x[r * cols + c]);
    mx[r] = m;
}

__global__ void row_sum(const float* x, const float* mx, float* sm, int rows, int cols) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += expf(x[r * cols + c] - mx[r]);
    sm[r] = s;
}

__global__ void normalize(const float* x, const float* mx, const float* sm, float* y, int rows,
                          int cols) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int c = 0; c < cols; ++c) y[r * cols + c] = expf(x[r * cols + c] - mx[r]) / sm[r];
}

void launch(const float* x, float* y, float* mx, float* sm, int rows, int cols) {
    const int blocks = (rows + 127) / 128;
    row_max<<<blocks, 128>>>(x, mx, rows, cols);
    row_sum<<<blocks, 128>>>(x, mx, sm, rows, cols);
    normalize<<<blocks, 128>>>(x, mx, sm, y, rows, cols);
}
