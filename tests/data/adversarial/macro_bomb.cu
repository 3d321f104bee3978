// cheat: preprocesses -- a doubling macro chain expands to 2^28 tokens and exhausts whoever preprocesses it.
#define A0 x x
#define A1 A0 A0
#define A2 A1 A1
#define A3 A2 A2
#define A4 A3 A3
#define A5 A4 A4
#define A6 A5 A5
#define A7 A6 A6
#define A8 A7 A7
#define A9 A8 A8
#define B0 A9 A9 A9 A9 A9 A9 A9 A9
#define B1 B0 B0 B0 B0 B0 B0 B0 B0
#define B2 B1 B1 B1 B1 B1 B1 B1 B1
#define B3 B2 B2 B2 B2 B2 B2 B2 B2
#define B4 B3 B3 B3 B3 B3 B3 B3 B3
#define B5 B4 B4 B4 B4 B4 B4 B4 B4
#include <cuda_runtime.h>
#define x 1,
static const int bomb[] = { B5 0 };

__global__ void square(const float* x_, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x_[i] * x_[i];
}

extern "C" int launch(const float* x_, float* y, int n, cudaStream_t stream) {
    square<<<(n + 255) / 256, 256, 0, stream>>>(x_, y, n);
    return (int)cudaGetLastError();
}
