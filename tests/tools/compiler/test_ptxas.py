"""ptxas -v parsing on logs captured from nvcc 13.0 (sm_80 prints cmem, sm_90 does not)."""

from __future__ import annotations

from structcover.tools.compiler.ptxas import _fallback_demangle, name_stats, parse_ptxas, short_name

SM80_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z2tkILi4EEvPf' for 'sm_80'
ptxas info    : Function properties for _Z2tkILi4EEvPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 2.065 ms
ptxas info    : Compiling entry function '_Z3addPKfPfi' for 'sm_80'
ptxas info    : Function properties for _Z3addPKfPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]
ptxas info    : Compile time = 1.784 ms
"""

SPILL_LOG = """ptxas info    : Compiling entry function '_Z5spillPfPKfi' for 'sm_90'
ptxas info    : Function properties for _Z5spillPfPKfi
    376 bytes stack frame, 888 bytes spill stores, 940 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 376 bytes cumulative stack size
"""


def test_parses_every_entry_with_its_numbers() -> None:
    stats, symbols = name_stats(parse_ptxas(SM80_LOG))
    by_name = {s.kernel: s for s in stats}
    assert set(by_name) == {"tk<4>", "add"}
    assert by_name["add"].registers == 12
    assert by_name["add"].smem_bytes == 1024
    assert by_name["add"].barriers == 1
    assert by_name["tk<4>"].registers == 8
    assert by_name["tk<4>"].smem_bytes == 0
    assert symbols["add"] == "_Z3addPKfPfi"


def test_parses_stack_and_spills() -> None:
    (symbol, stat), = parse_ptxas(SPILL_LOG)
    assert symbol == "_Z5spillPfPKfi"
    assert (stat.registers, stat.stack_bytes) == (32, 376)
    assert (stat.spill_store_bytes, stat.spill_load_bytes) == (888, 940)


def test_names() -> None:
    assert short_name("void scale<4>(float*)") == "scale<4>"
    assert short_name("add(float const*, float*, int)") == "add"
    assert short_name("void ns::k<Pair<int, 2> >(int)") == "ns::k<Pair<int, 2> >"
    assert _fallback_demangle("_Z3addPKfPfi") == "add"
    assert _fallback_demangle("plain_c_kernel") == "plain_c_kernel"
