"""Extraction never raises: junk, huge, deeply nested, unterminated, macro-heavy, non-CUDA."""

from __future__ import annotations

import feature_kernels as K
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structcover.tools.features.extract import extract_values
from structcover.tools.features.registry import FEATURES, NAMES

_TYPES = {"count": int, "bool": bool, "float": (float, type(None)), "category": str}
SEEDS = [K.TILED_GEMM, K.WARP_REDUCE, K.SHARED_REDUCE, K.VECTOR, K.MISC, K.TRANSPOSE_TILED]


def _well_formed(values: dict) -> None:
    assert set(NAMES) <= set(values)
    for spec in FEATURES:
        assert isinstance(values[spec.name], _TYPES[spec.kind]), spec.name


@pytest.mark.parametrize("src", [
    "", "\0\0\0", bytes(range(256)) * 20, "/* never closed __global__ void k() {",
    "#define X(a) a[\n#define Y X(\n__global__ void k(float* p) { Y threadIdx.x]); }",
    "__global__ void k(float* a) { a[" + "(" * 3000 + "threadIdx.x" + ")" * 3000 + "] = 1; }",
    "__global__ void k(float* a) { int i = " + " + ".join(["threadIdx.x"] * 4000) + "; a[i] = 0; }",
    "__shared__ float s[32]; __global__ void k(float* a) { float v = a[threadIdx.x]; "
    "s[threadIdx.x] = " + "(" * 20000 + "v" + ")" * 20000 + "; __syncthreads(); a[0] = s[1]; }",
    "__global__ void k(float* a) { a[0] = " + "-" * 50000 + "threadIdx.x; }",
    "struct __align__(16) S { float x; }; __global__ void k(S* s) { "
    "auto f = [] __device__ (int i) { return i; }; s[threadIdx.x].x = f(1); }",
    "template <typename T> class Foo { public: T bar(T x) { return x * 2; } }; "
    "int main() { Foo<int> f; return f.bar(2); }",
    "def f(x):\n    return [i for i in range(x)]\n\nprint(f(3))\n",
    "__global__ void k(float* a) { int i = threadIdx.x; i = a[i]; a[i] = i; i = i + 1; "
    "a[a[a[i]]] = 0; }",
])
def test_adversarial_inputs_do_not_raise(src):
    values = extract_values(src)
    _well_formed(values)
    assert values["parse.extract_error"] is False


def test_broken_code_records_parse_errors():
    values = extract_values("__global__ void k(float* a) { a[threadIdx.x = ; } }} ((")
    assert values["parse.error_nodes"] > 0
    assert values["parse.error_fraction"] > 0


def test_grammar_gap_does_not_hide_the_rest():
    src = "struct __align__(16) V { float x, y, z, w; };\n" + K.TILED_GEMM
    values = extract_values(src)
    assert values["parse.error_nodes"] > 0
    assert values["smem.tiled"] is True and values["sync.barriers_in_loops"] == 2


@pytest.mark.slow
def test_five_megabyte_file_is_cut_not_fatal():
    src = K.COALESCED * (5_100_000 // len(K.COALESCED) + 1)
    values = extract_values(src, max_source_bytes=5_000_000)
    _well_formed(values)
    assert values["parse.truncated"] is True
    assert values["kernel.count"] > 1000


@st.composite
def mutated_programs(draw) -> str:
    src = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["delete", "insert", "duplicate", "swap"]))
        i = draw(st.integers(0, len(src)))
        j = draw(st.integers(i, min(len(src), i + 40)))
        if op == "delete":
            src = src[:i] + src[j:]
        elif op == "insert":
            src = src[:i] + draw(st.sampled_from(
                ["{", "}", "(", "[", "]", ";", "/*", "\"", "#define A ", "<<<", ">>>", "__shared__",
                "threadIdx.x", "for(;;)", "\x00", "\udcff", "if (", "*", "&"])) + src[i:]
        elif op == "duplicate":
            src = src[:j] + src[i:j] + src[j:]
        else:
            src = src[i:j] + src[:i] + src[j:]
    return src


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_programs())
def test_fuzz_mutated_programs_never_raise(src):
    values = extract_values(src)
    _well_formed(values)
    assert values["parse.extract_error"] is False


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes_never_raise(data):
    _well_formed(extract_values(data))
