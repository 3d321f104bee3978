"""Data flow that follows real code (issue 12): pointer aliases and arithmetic, helper calls,
loop-carried offsets, constants and template parameters; classification holds through them
for global and shared memory."""

from __future__ import annotations

from structcover.tools.features.extract import extract_values

_KEYS = ("coalesced", "strided", "broadcast", "indirect", "unknown")


def g(src: str) -> dict[str, int]:
    """Global access counts by class."""
    values = extract_values(src)
    assert not values["parse.extract_error"]
    return {k: values[f"mem.global_{k}"] for k in _KEYS if values[f"mem.global_{k}"]}


ADVANCED_POINTERS = r"""
#define BM 32
#define BK 32
__global__ void sg(int M, int N, int K, const float* A, const float* B, float* C) {
    const int cRow = blockIdx.y, cCol = blockIdx.x;
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BM];
    const int tr = threadIdx.x / BK, tc = threadIdx.x % BK;
    A += cRow * BM * K;
    B += cCol * BM;
    C += cRow * BM * N + cCol * BM;
    float tmp = 0.0f;
    for (int bk = 0; bk < K; bk += BK) {
        As[tr * BK + tc] = A[tr * K + tc];
        Bs[tr * BM + tc] = B[tr * N + tc];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (int d = 0; d < BK; ++d) tmp += As[tr * BK + d] * Bs[d * BM + tc];
        __syncthreads();
    }
    C[tr * N + tc] = tmp;
}
"""


def test_pointers_advanced_by_blocks_and_loop_carried_steps_stay_coalesced():
    values = extract_values(ADVANCED_POINTERS)
    assert g(ADVANCED_POINTERS) == {"coalesced": 3}
    assert values["smem.accesses"] == 4 and values["smem.tiled"]
    assert values["pattern.reuse"] == "smem_tiling"


def test_a_thread_offset_added_to_a_pointer_is_followed():
    # Without the increment the load would read as warp-uniform (broadcast).
    src = r"""
    __global__ void pi(const float* x, float* y) {
        const float* p = x;
        p += blockIdx.x * blockDim.x + threadIdx.x;
        float* q = y;
        q += (blockIdx.x * blockDim.x + threadIdx.x) * 32;
        *q = *p;
    }"""
    assert g(src) == {"coalesced": 1, "strided": 1}


def test_pointer_aliases_address_of_auto_and_vector_casts():
    src = r"""
    __global__ void al(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        const float* q = &x[i];
        auto r = x + i * 8;
        float* out = y + blockIdx.x * blockDim.x;
        out[threadIdx.x] = q[0] + *r;
        int off = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
        float4 v = *reinterpret_cast<const float4*>(x + off);
        reinterpret_cast<float4*>(y)[i] = v;
    }"""
    values = extract_values(src)
    # q and out coalesced; r strided (8 apart); x + 4*i as float4 is one float4 per lane.
    assert g(src) == {"coalesced": 4, "strided": 1}
    assert values["mem.vector_width_global"] == 4


def test_indices_passed_into_device_helpers():
    coalesced = r"""
    __device__ float load(const float* p, int i) { return p[i]; }
    __device__ void store(float* p, int j, float v) { p[j] = v; }
    __global__ void h(const float* x, float* y) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        store(y, i, load(x, i) * 2.0f);
    }"""
    strided = coalesced.replace("load(x, i)", "load(x, i * 64)")
    row_ptr = r"""
    __device__ float first(const float* row) { return row[0]; }
    __global__ void h(const float* x, float* y, int cols) {
        int r = blockIdx.x * blockDim.x + threadIdx.x;
        y[r] = first(x + r * cols);
    }"""
    indirect = coalesced.replace("load(x, i)", "load(x, (int)x[i])")
    assert g(coalesced) == {"coalesced": 2}
    assert g(strided) == {"coalesced": 1, "strided": 1}
    assert g(row_ptr) == {"coalesced": 1, "strided": 1}
    assert g(indirect)["indirect"] == 1


def test_two_call_levels():
    src = r"""
    __device__ float at(const float* p, int k) { return p[k]; }
    __device__ float twice(const float* p, int j) { return 2.0f * at(p, j); }
    __global__ void h(const float* x, float* y, int s) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        y[i] = twice(x, i * s);
    }"""
    assert g(src) == {"coalesced": 1, "strided": 1}


def _tile_kernel(params: str) -> str:
    """A template kernel whose shared tile, register array and loops take BM, BK, TM."""
    return f"\n    template <{params}>\n" + r"""
    __global__ void t(const float* A, float* C, int K) {
        __shared__ float As[BM * BK];
        float acc[TM] = {0.f};
        for (int i = 0; i < TM; ++i) acc[i] += A[threadIdx.x + i * BM];
        As[threadIdx.x] = acc[0];
        __syncthreads();
        for (int i = 0; i < TM; ++i) C[blockIdx.x * K + As[i] + i] = acc[i];
    }
    """


def test_template_parameters_fixed_by_the_launch_site():
    src = _tile_kernel("int BM, int BK, int TM = 8") + r"""
    void launch(const float* A, float* C, int K) { t<64, 8><<<1, 256>>>(A, C, K); }
    """
    values = extract_values(src)
    assert values["smem.static_bytes"] == 64 * 8 * 4 and values["smem.unresolved_sizes"] == 0
    assert values["reg.accumulators"] == 8 and values["reg.outputs_per_thread"] == 8
    unlaunched = src.replace("t<64, 8><<<1, 256>>>(A, C, K);", "")
    assert extract_values(unlaunched)["smem.unresolved_sizes"] == 1
    explicit = unlaunched + "\ntemplate __global__ void t<16, 4>(const float*, float*, int);\n"
    assert extract_values(explicit)["smem.static_bytes"] == 16 * 4 * 4


def test_template_arguments_named_by_the_launchers_local_constants():
    # The common launcher: tile sizes are ``const`` locals of the host function, passed by
    # name (``k<BM, BN, TM><<<...>>>``; tree-sitter reads each bare name as a type), one
    # branch per problem size. The first launch fixes the parameters, in its own scope.
    src = _tile_kernel("const int BM, const int BK, const int TM") + r"""
    void launch(const float* A, float* C, int K) {
        const unsigned BK = 8;
        const unsigned TM = 2 * 4;
        if (K >= 128) {
            const unsigned BM = 64;
            t<BM, BK, TM><<<1, 256>>>(A, C, K);
        } else {
            const unsigned BM = 32;
            t<BM, BK, TM><<<1, 128>>>(A, C, K);
        }
    }
    """
    values = extract_values(src)
    assert values["smem.static_bytes"] == 64 * 8 * 4 and values["smem.unresolved_sizes"] == 0
    assert values["reg.accumulators"] == 8 and values["reg.outputs_per_thread"] == 8
    # One forward takes one branch: the two launches are alternatives, not two kernels.
    assert values["fusion.launches_per_forward"] == 1
    runtime = src.replace("const unsigned TM = 2 * 4;", "const unsigned TM = K / 16;")
    assert extract_values(runtime)["reg.accumulators"] == 0  # not fixed by the source


def test_helpers_called_through_a_namespace_see_shared_arguments():
    src = r"""
    namespace tile {
    __device__ void load(const float* A, float* As, int row) {
        As[threadIdx.x] = A[row * 32 + threadIdx.x];
    }
    }
    __global__ void k(const float* A, float* out) {
        __shared__ float As[32];
        tile::load(A, As, blockIdx.x);
        __syncthreads();
        out[blockIdx.x * 32 + threadIdx.x] = As[31 - threadIdx.x];
    }
    """
    values = extract_values(src)
    assert values["smem.accesses"] == 2
    assert g(src) == {"coalesced": 2}


def test_constexpr_file_constants_and_macro_expressions():
    src = r"""
    constexpr int TILE = 32;
    static const int PAD = 1;
    #define STRIDE (TILE * 2)
    __global__ void c(const float* x, float* y) {
        __shared__ float s[TILE][TILE + PAD];
        constexpr int W = 32;
        s[threadIdx.y][threadIdx.x] = x[threadIdx.x * STRIDE];
        __syncthreads();
        y[threadIdx.y * W + threadIdx.x] = s[threadIdx.x][threadIdx.y];
    }"""
    values = extract_values(src)
    assert values["smem.static_bytes"] == 32 * 33 * 4 and values["smem.padded"]
    assert g(src) == {"coalesced": 1, "strided": 1}


def test_shared_memory_classification_and_bank_conflicts():
    base = r"""
    #define T 32
    __global__ void tr(const float* in, float* out, int n) {
        __shared__ float tile[T][COLS];
        int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
        tile[threadIdx.y][threadIdx.x] = in[y * n + x];
        __syncthreads();
        x = blockIdx.y * T + threadIdx.x; y = blockIdx.x * T + threadIdx.y;
        out[y * n + x] = tile[threadIdx.x][threadIdx.y];
    }"""
    plain = extract_values(base.replace("COLS", "T"))
    padded = extract_values(base.replace("COLS", "T + 1"))
    assert plain["smem.strided_accesses"] == padded["smem.strided_accesses"] == 1
    assert plain["smem.bank_conflicts"] == 1 and padded["smem.bank_conflicts"] == 0
    # Through a pointer alias into the shared tile the access is still shared and strided.
    alias = base.replace("COLS", "T").replace(
        "out[y * n + x] = tile[threadIdx.x][threadIdx.y];",
        "float* col = &tile[0][threadIdx.y]; out[y * n + x] = col[threadIdx.x * T];")
    av = extract_values(alias)
    assert av["smem.accesses"] == 2 and av["smem.bank_conflicts"] == 1


# A policy can hide a gather behind a local it assigns after declaring it, behind a call the
# affine evaluation gives up on, or behind a compound update: each is still a loaded address.
HIDDEN_GATHERS = {
    "assigned after its declaration": """
    __global__ void k(const int* col, const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int c = int();
        if (i < n) c = col[i];
        if (i < n) y[i] = x[c];
    }""",
    "inside a call": """
    __global__ void k(const int* col, const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[min(col[i], n - 1)];
    }""",
    "through __ldg in a call": """
    __global__ void k(const int* col, const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[max(__ldg(&col[i]), 0)];
    }""",
    "a compound update": """
    __global__ void k(const int* col, const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int c = i;
        c += col[i] - i;
        if (i < n) y[i] = x[c];
    }""",
    "a fifth assignment": """
    __global__ void k(const int* col, const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int c = i;
        c = i; c = i; c = i; c = i;
        c = col[i];
        if (i < n) y[i] = x[c];
    }""",
}


def test_a_gather_hidden_behind_a_local_a_call_or_an_update_is_indirect():
    for how, src in HIDDEN_GATHERS.items():
        counts = g(src)
        assert counts.get("indirect", 0) >= 1 and "unknown" not in counts, (how, counts)
        assert extract_values(src)["pattern.global_access"] == "indirect", how


def test_a_local_assigned_only_affine_values_is_never_indirect():
    src = """
    __global__ void k(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int j = 0;
        j = i;
        if (i < n) y[i] = x[j];
    }"""
    # (flow-insensitive: j is 0 or i, so x[j] is unknown, but it reads no memory)
    assert "indirect" not in g(src)


def test_a_pointer_declared_in_sibling_blocks_is_followed_in_each():
    # One alias name per branch: each use reaches its own declaration (the accesses were
    # dropped when the name had two definitions in the function).
    src = """
    __global__ void k(const float* x, float* y, int n, int cols) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n / 2) {
            const float* p = x + i;
            y[i] = p[0];
        } else {
            const float* p = x + (size_t)i * cols;
            y[i] = p[0];
        }
    }"""
    assert g(src) == {"coalesced": 3, "strided": 1}


def test_a_pointer_reassigned_into_memory_is_an_unknown_access_not_none():
    src = """
    __global__ void k(const float* x, const float* z, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        const float* p = x;
        if (i & 1) p = z;
        y[i] = p[i];
    }"""
    assert g(src) == {"coalesced": 1, "unknown": 1}


def test_an_atomic_updates_a_location_counted_and_classified_as_a_store():
    # An atomic's address is a read-modify-write. Counting it keeps a policy from hiding a
    # strided store behind atomicExch (it used to read as no store at all).
    kernel = r"""
    __global__ void k(const float* x, float* y, int n, const int* col) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        __shared__ int h[256];
        __shared__ float s[32][33];
        BODY
    }
    """
    def at(body: str) -> dict:
        values = extract_values(kernel.replace("BODY", body))
        assert not values["parse.extract_error"]
        return values

    strided = at("atomicExch(&y[i * n], x[i]);")
    assert g(kernel.replace("BODY", "atomicExch(&y[i * n], x[i]);")) == {"coalesced": 1,
                                                                         "strided": 1}
    assert strided["mem.global_stores"] == 1 and strided["pattern.global_access"] == "mixed"
    plain = at("y[i * n] = x[i];")
    assert plain["pattern.global_access"] == strided["pattern.global_access"]
    assert g(kernel.replace("BODY", "atomicAdd(y + i, x[i]);")) == {"coalesced": 2}
    assert g(kernel.replace("BODY", "atomicAdd(y, x[i]);")) == {"coalesced": 1, "broadcast": 1}
    assert g(kernel.replace("BODY", "float* p = &y[i]; atomicAdd(p, 1.0f);")) == {
        "coalesced": 1}
    scatter = at("atomicAdd(&y[col[i]], 1.0f);")
    assert scatter["mem.global_indirect"] == 1 and scatter["pattern.global_access"] == "indirect"
    # Shared-memory atomics are shared accesses, never global ones.
    shared = at("atomicAdd(&h[col[i] & 255], 1); atomicAdd(&s[threadIdx.x][0], 1.0f);")
    assert shared["smem.accesses"] == 2 and shared["atomics.shared"] == 2
    assert shared["mem.global_stores"] == 0 and shared["smem.strided_accesses"] == 1


def test_a_struct_handing_out_dynamic_shared_memory_is_followed():
    # The CUDA samples' idiom, copied into many reductions and scans: a struct whose
    # conversion operator returns an ``extern __shared__`` array.
    src = r"""
    template <class T> struct Scratch {
        __device__ operator T*() { extern __shared__ int raw[]; return (T*)raw; }
    };
    template <class T>
    __global__ void tree(const T* in, T* out, unsigned n) {
        T* s = Scratch<T>();
        unsigned tid = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
        s[tid] = i < n ? in[i] : T(0);
        __syncthreads();
        for (unsigned k = 1; k < blockDim.x; k *= 2) {
            unsigned at = 2 * k * tid;
            if (at < blockDim.x) s[at] += s[at + k];
            __syncthreads();
        }
        if (tid == 0) out[blockIdx.x] = s[0];
    }
    void launch(const float* in, float* out, unsigned n) {
        tree<float><<<(n + 255) / 256, 256, 256 * sizeof(float)>>>(in, out, n);
    }
    """
    values = extract_values(src)
    assert values["smem.accesses"] == 4 and values["pattern.reuse"] == "smem_staging"
    # Interleaved addressing: lanes 2k elements apart, an even stride, so banks conflict.
    assert values["smem.strided_accesses"] == 2 and values["smem.bank_conflicts"] == 2
    assert g(src) == {"coalesced": 1, "broadcast": 1}


def test_a_helper_no_kernel_calls_is_not_the_kernels_structure():
    # An unused helper full of shuffles must not make a plain kernel read as warp-level
    # (a policy could append one to land in a bin it does not occupy).
    plain = r"""
    __global__ void scale(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = 2.0f * x[i];
    }
    """
    dead = r"""
    __device__ float warp_sum(float v) {
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        return v;
    }
    """ + plain
    for src in (plain, dead):
        values = extract_values(src)
        assert values["warp.shuffles"] == 0 and values["pattern.sync"] == "none"
        assert values["kernel.device_functions"] == 0
    used = dead.replace("y[i] = 2.0f * x[i];", "y[i] = warp_sum(x[i]);")
    values = extract_values(used)
    assert values["warp.shuffles"] == 1 and values["kernel.device_functions"] == 1
    # A file of helpers alone (no kernel) keeps them.
    assert extract_values(dead.split("__global__")[0])["warp.shuffles"] == 1
