"""The one integer-expression evaluator: C semantics, hostile input refused fast."""

from __future__ import annotations

import time

import pytest

from structcover.arith import LAUNCH_CALLS, MAX_BITS, ExprError, eval_int_expr, from_c
from structcover.schema import eval_size_expr
from structcover.tools.compiler.launches import find_launches
from structcover.tools.mutations._tree import eval_int


@pytest.mark.parametrize(("text", "value"), [
    ("M*K+1", 13), ("(M+K)/2", 3), ("-7/2", -3), ("-7%2", -1), ("1<<10", 1024),
    ("M**2", 9), ("~0 & 255", 255), ("K>>1 | 8", 10), ("M ^ 1", 2),
])
def test_arithmetic_follows_c(text: str, value: int) -> None:
    assert eval_int_expr(text, {"M": 3, "K": 4}) == value


@pytest.mark.parametrize("text", [
    "9**9**9**9", "2**65", "1 << 64", "1 << -1", "(1<<62)*(1<<62)", "10**30",
    "__import__('os').system('true')", "M.__class__", "[1][0]", "1 if M else 2", "len('ab')",
    "M / 0", "Q + 1", "1.5 * 2", "True + 1", "(" * 300 + "1" + ")" * 300, "1+" * 400 + "1",
])
def test_hostile_or_unknown_is_refused_fast(text: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ExprError):
        eval_int_expr(text, {"M": 3})
    assert time.perf_counter() - start < 0.5


def test_limits_are_exact() -> None:
    assert eval_int_expr("2**62") == 2**62
    assert eval_int_expr(f"1 << {MAX_BITS - 1}") == 1 << (MAX_BITS - 1)
    with pytest.raises(ExprError, match="exceeds"):
        eval_int_expr(f"2**{MAX_BITS}")


def test_c_syntax_and_dim3() -> None:
    assert eval_int_expr(from_c("(int)16u * 2UL"), calls=LAUNCH_CALLS) == 32
    assert eval_int_expr("dim3(16, 16)", calls=LAUNCH_CALLS) == 256
    with pytest.raises(ExprError):
        eval_int_expr("dim3(16, 16)")  # calls must be allowed explicitly


def test_callers_share_it() -> None:
    with pytest.raises(ValueError, match="9\\*\\*9"):
        eval_size_expr("9**9**9**9", {})
    assert eval_size_expr("N/2", {"N": 5}) == 2
    assert eval_int("9**9**9**9", {}) is None
    assert eval_int("BLOCK/2", {"BLOCK": 256}) == 128
    src = ("#define B (1 << 200)\n__global__ void k(float* x) {}\n"
           "void run(float* x) { k<<<1, B>>>(x); k<<<1, dim3(8u, 4)>>>(x); }\n")
    sizes = [site.block_size for site in find_launches(src)]
    assert sizes == [None, 32]
