"""The shortcuts taken for speed (issue 3) must not change what is found.

Each test targets one shortcut in ``facts.py``: the text pre-checks that skip child walks
(qualifiers, launch syntax), the single read of an init-declarator's target, and host
functions recording no device sites. The inputs are the cases where a careless shortcut
would miss something: comments and spacing between tokens, qualifier order, pointer and
array declarators, host code with loops and accesses.
"""

from __future__ import annotations

from structcover.tools.cuda_ast import parse
from structcover.tools.features.extract import extract_values
from structcover.tools.features.facts import collect

LAUNCHES = r"""
__global__ void k(float* a) { a[threadIdx.x] = 0.f; }
void run(float* a) {
    k<<<1, 32>>>(a);
    k /* spaced */ <<< 2, 64 >>> (a);
    k
      <<<4, 128>>>(a);
    other(a);
}
"""

QUALIFIERS = r"""
__host__ __device__ float f1(float x) { return x; }
__device__ __host__ float f2(float x) { return x; }
__device__ __forceinline__ float f3(float x) { return x; }
template <typename T> __global__ void k1(T* a) { a[threadIdx.x] = f1(1.f); }
static __global__ void k2(float* a) { a[0] = 0.f; }
float host_only(float x) { return x; }
__host__ float host_marked(float x) { return x; }
"""

DECLARATORS = r"""
__global__ void k(const float* __restrict__ a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* p = a + i;
    float buf[4];
    float *q = out, s = 0.f;
    int j;
    j = i;
    for (int t = 0; t < 4; ++t) buf[t] = p[t];
    q[j] = buf[0] + s;
}
"""

HOST_AND_DEVICE = r"""
__global__ void k(const float* a, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i];
}
void host(float* h, int n) {
    for (int r = 0; r < n; ++r)
        for (int q = 0; q < n; ++q)
            if (h[r * n + q] > 0) h[q] = *h;
}
"""

# Addresses taken (`&a[i]`) are not accesses unless a load intrinsic reads through them, and
# the inner part of a 2-D access is not a second access, whatever spacing or comments sit
# between the tokens.
ADDRESSES = r"""
__global__ void k(const float* __restrict__ a, float* out, int n) {
    __shared__ float tile[32][33];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = __ldg(&a[i]);
    float w = __ldg( & /* c */ a[i + 1]);
    const float* p = &a[i];
    const float* q = & a [i];
    tile[threadIdx.y] /* row */ [threadIdx.x] = v;
    tile[threadIdx.y]
        [threadIdx.x] += w;
    __syncthreads();
    out[i] = tile[threadIdx.x]                                           [threadIdx.y] + p[0] + *q;
}
"""


def test_launches_found_whatever_lies_between_name_and_chevrons():
    facts = collect(parse(LAUNCHES))
    assert len(facts.launches) == 3
    values = extract_values(LAUNCHES)
    assert values["launch.count"] == 3
    assert values["launch.block_size"] == 128
    assert values["launch.distinct_block_sizes"] == 3


def test_qualifiers_in_any_order_give_the_function_kind():
    # Every definition, called or not (unused helpers are dropped only for measuring).
    kinds = {f.name: f.kind for f in collect(parse(QUALIFIERS), keep_unused=True).funcs}
    assert kinds == {b"f1": "device", b"f2": "device", b"f3": "device", b"k1": "global",
                     b"k2": "global", b"host_only": "host", b"host_marked": "host"}


def test_device_params_read_and_host_params_skipped():
    funcs = {f.name: f for f in collect(parse(QUALIFIERS + DECLARATORS)).funcs}
    assert list(funcs[b"k1"].params) == [b"a"]
    assert funcs[b"k1"].params[b"a"].pointer
    k = funcs[b"k"]
    assert k.params[b"a"].restrict and k.params[b"a"].const and not k.params[b"out"].const
    assert funcs[b"host_only"].params == {}  # never read: spaces are device questions


def test_init_declarator_targets():
    k = collect(parse(DECLARATORS)).funcs[0]
    assert k.local_ptrs == {b"p", b"q"}
    assert k.local_arrays == {b"buf"}
    assert [op for op, _ in k.defs[b"i"]] == ["decl"]
    assert [op for op, _ in k.defs[b"t"]] == ["for"]
    assert [op for op, _ in k.defs[b"j"]] == ["="]
    assert b"s" in k.defs and b"buf" not in k.defs
    values = extract_values(DECLARATORS)
    # p = a + i is followed through the local pointer: p[t] is a per-thread strided load.
    assert values["mem.global_loads"] == 1 and values["mem.global_stores"] == 1
    assert values["loop.count"] == 1


def test_host_code_adds_no_device_sites():
    facts = collect(parse(HOST_AND_DEVICE))
    kernel, host = facts.funcs
    assert (len(kernel.subscripts), len(kernel.branches)) == (2, 1)
    assert (host.subscripts, host.derefs, host.loops, host.branches) == ([], [], [], [])
    values = extract_values(HOST_AND_DEVICE)
    assert values["loop.count"] == 0 and values["loop.max_depth"] == 0
    assert values["branch.count"] == 1
    assert values["mem.global_coalesced"] == 2
    alone = extract_values(HOST_AND_DEVICE.split("void host")[0])
    same = [n for n in values if n.startswith(("mem.", "loop.", "branch.", "sync."))]
    assert {n: values[n] for n in same} == {n: alone[n] for n in same}


def test_address_of_and_two_dimensional_accesses_with_spacing_and_comments():
    values = extract_values(ADDRESSES)
    # loads: __ldg(&a[i]), __ldg(& /* c */ a[i + 1]), p[0], *q; store: out[i]
    assert (values["mem.global_loads"], values["mem.global_stores"]) == (4, 1)
    assert values["mem.ldg"] == 2
    assert values["smem.accesses"] == 3  # tile[y][x] written twice, read once
    broken = extract_values(ADDRESSES.replace("int i =", "int i = (("))  # an error tree
    assert broken["parse.error_nodes"] > 0
