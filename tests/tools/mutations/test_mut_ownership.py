"""Ownership: a per-element atomicAdd scatter (the histogram) rewritten as owners that each
compute one output alone verifies on the CPU emulator, and leaves the atomic level."""

from mutation_cases import program, verify_operator

from structcover.tools.features.extract import extract_features
from structcover.tools.features.structure import pattern_features
from structcover.tools.mutations.base import dry_run, get_operator


def _levels(source: str) -> tuple[str, str]:
    p = pattern_features(extract_features(source).values)
    return p["pattern.global_access"], p["pattern.sync"]


def test_atomics_to_owner_variants_verify(cpu_backend):
    verify_operator("atomics_to_owner", [("histogram", "reference")], cpu_backend)


def test_owners_leave_atomics_and_the_lane_operators_re_map_them():
    source = program("histogram", "reference")[0]
    # the scatter's address is the loaded bin: an indirect store, not a coalesced kernel
    assert _levels(source) == ("indirect", "atomic_or_grid")
    variant = get_operator("atomics_to_owner").func(source).variants[0].source
    assert _levels(variant) == ("coalesced", "none") and "atomic" not in variant.split(
        "__global__")[1].split("extern")[0]
    # the owner loop deals outputs to the grid's lanes: the lane operators take it further
    with dry_run():
        landed = {op: _levels(get_operator(op).func(variant).variants[0].source)
                  for op in ("lanes_chunked", "lanes_serial", "loads_indirect")}
    assert landed == {"lanes_chunked": ("strided", "none"), "lanes_serial": ("broadcast", "none"),
                      "loads_indirect": ("indirect", "none")}


def test_atomics_to_owner_needs_an_integer_scatter_with_a_known_extent():
    op = get_operator("atomics_to_owner").func
    float_sum = ("__global__ void k(const int* key, const float* v, float* out, int n, int m) {\n"
                 "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "    if (i < n) { const int b = key[i]; if (b < m) atomicAdd(&out[b], v[i]); }\n}\n")
    assert "not an integer output" in op(float_sum).not_applicable
    no_extent = ("__global__ void k(const int* key, int* out, int n) {\n"
                 "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "    if (i < n) { const int b = key[i]; atomicAdd(&out[b], 1); }\n}\n")
    assert "extent" in op(no_extent).not_applicable
