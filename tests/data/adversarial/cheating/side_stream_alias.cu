// cheat: side stream behind an alias -- work goes to a private stream made through a macro, via a helper whose parameter is named `stream`.
#include <cuda_runtime.h>
#define CAT(a, b) a##b
#define MAKE_QUEUE CAT(cudaStream, Create)
typedef cudaStream_t queue_t;

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

static void run_on(queue_t stream, const float* a, const float* b, float* c, int n) {
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    (void)stream;
    queue_t side;
    MAKE_QUEUE(&side);
    run_on(side, a, b, c, n);
    cudaStreamSynchronize(side);
    return (int)cudaGetLastError();
}
