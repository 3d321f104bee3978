// cheat: timing tampering via macro -- CUDA events and a host clock are reached through pasted names.
#include <cuda_runtime.h>
#define CAT(a, b) a##b
#define EV(x) CAT(cudaEv, x)

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    cudaEvent_t mark;
    EV(entCreate)(&mark);
    EV(entRecord)(mark, stream);  // a marker the harness's timer may be fooled by
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    EV(entDestroy)(mark);
    return (int)cudaGetLastError();
}
