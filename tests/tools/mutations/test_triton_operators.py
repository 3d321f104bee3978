"""Triton operators: what each rewrite looks like, when it does not apply, and dispatch.

Fast (no verification): the variants parse, keep ``ModelNew`` and the kernel's name, and
move the features their ``Moves:`` promise under the Triton extractor. Equivalence on
Triton's CPU interpreter is tests/tools/mutations/test_triton_verify.py.
"""

from __future__ import annotations

import ast
import difflib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools.features.extract import extract_features
from structcover.tools.features.registry import FEATURES
from structcover.tools.mutations._triton import check_python, is_triton_program
from structcover.tools.mutations.base import Builder, dry_run, registry
from structcover.tools.mutations.embedded import run_operator
from structcover.tools.mutations.stats import moved_as_promised

DATA = Path(__file__).parents[2] / "data" / "triton_mutation"
TRITON_OPS = ("triton_block_size", "triton_num_warps", "triton_num_stages",
              "triton_grouped_ordering", "triton_fp32_accumulate", "triton_fuse_epilogue",
              "triton_mask_vectorize")
#: (fixture, operator): every operator applies to at least one fixture.
CASES = [("add_relu.py", "triton_block_size"), ("row_sum_fp16.py", "triton_block_size"),
         ("matmul_fp16acc.py", "triton_block_size"), ("add_relu.py", "triton_num_warps"),
         ("matmul_fp16acc.py", "triton_num_stages"),
         ("matmul_fp16acc.py", "triton_grouped_ordering"),
         ("matmul_fp16acc.py", "triton_fp32_accumulate"), ("add_relu.py", "triton_fuse_epilogue"),
         ("add_relu_scalar.py", "triton_mask_vectorize")]

HEAD = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n"


def _read(name: str) -> str:
    return (DATA / name).read_text()


def _changed(old: str, new: str) -> list[str]:
    return [ln for ln in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="",
                                              n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def _variants(op: str, text: str) -> list[str]:
    result = run_operator(op, text)
    assert result.variants, result.not_applicable
    return [v.source for v in result.variants]


def _not_applicable(op: str, text: str) -> str:
    result = run_operator(op, text)
    assert not result.variants, [v.params for v in result.variants]
    assert result.not_applicable
    return result.not_applicable


def test_triton_operators_are_registered_with_their_language_and_known_features() -> None:
    ops = registry()
    known = {f.name for f in FEATURES}
    for name in TRITON_OPS:
        info = ops[name]
        assert info.language == "triton" and info.family.startswith("triton_"), name
        assert info.moves and set(info.moves) <= known, (name, set(info.moves) - known)
    assert all(info.language == "cuda" for n, info in ops.items() if n not in TRITON_OPS)


@pytest.mark.parametrize(("fixture", "op"), CASES)
def test_variants_parse_keep_the_model_and_move_as_promised(fixture: str, op: str) -> None:
    text = _read(fixture)
    before = extract_features(text).values
    result = run_operator(op, text)
    assert result.variants and not result.rejected, result.not_applicable
    for variant in result.variants:
        tree = ast.parse(variant.source)
        classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        assert "ModelNew" in classes and is_triton_program(variant.source)
        assert variant.params and variant.operator == op and variant.source != text
        moved, misses = moved_as_promised(before, extract_features(variant.source).values,
                                          variant.promised)
        assert moved, (variant.params, misses)


def test_block_size_edits_the_launch_literal_only() -> None:
    text = _read("add_relu.py")
    small, big = _variants("triton_block_size", text)
    assert _changed(text, big) == ["-        add_kernel[grid](a, b, out, n, BLOCK_SIZE=1024)",
                                   "+        add_kernel[grid](a, b, out, n, BLOCK_SIZE=2048)"]
    assert "BLOCK_SIZE=512)" in small


def test_block_size_edits_a_named_constant_and_the_grid_literal() -> None:
    kernel = ("@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n"
              "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
              "    tl.store(x_ptr + offs, 1.0, mask=offs < n)\n\n\n")
    named = HEAD + kernel + ("def run(x):\n    BLOCK = 256\n"
                             "    k[(triton.cdiv(x.numel(), BLOCK),)](x, x.numel(), BLOCK=BLOCK)\n")
    assert "    BLOCK = 512\n" in _variants("triton_block_size", named)[1]
    literal = HEAD + kernel + "def run(x):\n    k[(triton.cdiv(x.numel(), 256),)](x, x.numel(), 256)\n"
    assert "k[(triton.cdiv(x.numel(), 128),)](x, x.numel(), 128)" in \
        _variants("triton_block_size", literal)[0]


def test_block_size_scales_autotune_configs() -> None:
    text = HEAD + ('@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4),\n'
                   '                          triton.Config({"BLOCK": 128})], key=["n"])\n'
                   "@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n"
                   "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                   "    tl.store(x_ptr + offs, 1.0, mask=offs < n)\n\n\n"
                   "def run(x):\n"
                   '    k[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, x.numel())\n')
    small, big = _variants("triton_block_size", text)
    assert '{"BLOCK": 32}' in small and '{"BLOCK": 64}' in small
    assert '{"BLOCK": 128}' in big and '{"BLOCK": 256}' in big


def test_block_size_does_not_apply_to_whole_row_blocks_or_unmasked_kernels() -> None:
    row = HEAD + ("@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n"
                  "    offs = tl.arange(0, BLOCK)\n"
                  "    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n)\n"
                  "    tl.store(x_ptr + tl.program_id(0) * n + offs, x * 2, mask=offs < n)\n\n\n"
                  "def run(x):\n    k[(x.shape[0],)](x, x.shape[1], BLOCK=128)\n")
    assert "covers a whole extent" in _not_applicable("triton_block_size", row)
    unmasked = HEAD + ("@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n"
                       "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                       "    tl.store(x_ptr + offs, 1.0)\n\n\n"
                       "def run(x):\n"
                       '    k[lambda m: (x.numel() // m["BLOCK"],)](x, BLOCK=128)\n')
    assert "unmasked" in _not_applicable("triton_block_size", unmasked)


def test_num_warps_is_added_at_the_launch_or_set_in_configs() -> None:
    text = _read("add_relu.py")
    two, eight = _variants("triton_num_warps", text)
    assert "BLOCK_SIZE=1024, num_warps=2)" in two and "num_warps=8)" in eight
    tuned = HEAD + ('@triton.autotune(configs=[triton.Config({"B": 64}, num_warps=4)], key=[])\n'
                    "@triton.jit\ndef k(x_ptr, B: tl.constexpr):\n"
                    "    for i in range(4):\n        tl.load(x_ptr + i)\n\n\n"
                    "def run(x):\n    k[(1,)](x, num_warps=4)\n")
    variant = _variants("triton_num_warps", tuned)[0]
    assert 'triton.Config({"B": 64}, num_warps=2)' in variant and "k[(1,)](x, num_warps=4)" in variant
    assert 'triton.Config({"B": 64}, num_warps=4, num_stages=2)' in \
        _variants("triton_num_stages", tuned)[0]


def test_num_stages_needs_a_loop_that_loads() -> None:
    assert "pipelines such loops" in _not_applicable("triton_num_stages", _read("add_relu.py"))


def test_grouped_ordering_rewrites_the_row_major_split() -> None:
    text = _read("matmul_fp16acc.py")
    four, eight = _variants("triton_grouped_ordering", text)
    assert "GROUP_SIZE_M: tl.constexpr = 4)" in four and "GROUP_SIZE_M: tl.constexpr = 8)" in eight
    assert "    num_pid_m = tl.num_programs(0) // num_pid_n\n" in eight
    assert "    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)\n" in eight
    assert "    pid_n = (pid % num_pid_in_group) // group_size_m\n" in eight
    assert "pid // num_pid_n\n" not in eight
    assert _changed(text, eight)[-1].startswith("+    pid_n")  # the launch is unchanged
    assert "already grouped" in _not_applicable("triton_grouped_ordering", four)


def test_grouped_ordering_linearizes_two_program_axes_in_launch_order() -> None:
    text = HEAD + ("@triton.jit\ndef k(c_ptr, BM: tl.constexpr):\n"
                   "    pid_m = tl.program_id(axis=0)\n    pid_n = tl.program_id(1)\n"
                   "    tl.store(c_ptr + pid_m * 100 + pid_n, 1.0)\n\n\n"
                   "def run(c):\n    k[(4, 5)](c, BM=16)\n")
    variant = _variants("triton_grouped_ordering", text)[0]
    assert "pid = tl.program_id(1) * num_pid_m + tl.program_id(0)" in variant
    assert "num_pid_m = tl.num_programs(0)\n" in variant and "k[(4, 5)](c, BM=16)" in variant


def test_fp32_accumulate_widens_the_accumulator_and_casts_after_the_loop() -> None:
    text = _read("matmul_fp16acc.py")
    (variant,) = _variants("triton_fp32_accumulate", text)
    assert "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)" in variant
    assert "out_dtype=tl.float32)" in variant and "out_dtype=tl.float16" not in variant
    after_loop = variant.index("    acc = acc.to(tl.float16)")
    assert variant.index("acc += tl.dot") < after_loop < variant.index("c = acc.to(tl.float32)")
    acc_form = text.replace("acc += tl.dot(a.to(tl.float16), b.to(tl.float16), "
                            "out_dtype=tl.float16)", "acc = tl.dot(a, b, acc).to(tl.float16)")
    (v2,) = _variants("triton_fp32_accumulate", acc_form)
    assert "acc = tl.dot(a, b, acc, out_dtype=tl.float32)\n" in v2
    fp32 = text.replace("dtype=tl.float16)", "dtype=tl.float32)")
    assert "no fp16/bf16 accumulator" in _not_applicable("triton_fp32_accumulate", fp32)
    assert "no fp16/bf16 accumulator" in _not_applicable("triton_fp32_accumulate",
                                                         _read("row_sum_fp16.py"))


def test_fuse_epilogue_moves_the_torch_op_into_the_store() -> None:
    text = _read("add_relu.py")
    (variant,) = _variants("triton_fuse_epilogue", text)
    assert "    epilogue = a + b\n" in variant
    assert "tl.store(out_ptr + offsets, tl.where(epilogue > 0, epilogue, 0.0), mask=mask)" in variant
    assert "torch.relu" not in variant and "        return out\n" in variant
    gelu = _variants("triton_fuse_epilogue", text.replace("torch.relu(out)",
                                                          "torch.nn.functional.gelu(out)"))[0]
    assert "tl.erf(epilogue.to(tl.float32) * 0.7071067811865476)" in gelu
    scaled = _variants("triton_fuse_epilogue", text.replace("torch.relu(out)",
                                                            "torch.mul(out, -2.5)"))[0]
    assert "tl.store(out_ptr + offsets, epilogue * (-2.5), mask=mask)" in scaled


def test_fuse_epilogue_does_not_apply_when_the_output_is_reused_or_relaunched() -> None:
    text = _read("add_relu.py")
    reused = text.replace("return torch.relu(out)", "return torch.relu(out) + out")
    assert "no kernel output" in _not_applicable("triton_fuse_epilogue", reused)
    twice = text.replace("        return torch.relu(out)",
                         "        add_kernel[grid](a, b, a, n, BLOCK_SIZE=1024)\n"
                         "        return torch.relu(out)")
    assert "several sites" in _not_applicable("triton_fuse_epilogue", twice)
    method = text.replace("torch.relu(out)", "out * 2")
    assert "no kernel output" in _not_applicable("triton_fuse_epilogue", method)


def test_mask_vectorize_blocks_a_scalar_kernel() -> None:
    text = _read("add_relu_scalar.py")
    v128, _ = _variants("triton_mask_vectorize", text)
    assert "def add_one(a_ptr, b_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):" in v128
    assert "    i = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n" \
           "    mask = i < n_elements\n" in v128
    assert "tl.load(a_ptr + i, mask=mask)" in v128
    assert "tl.store(out_ptr + i, tl.where(s > 0, s, 0.0), mask=mask)" in v128
    assert "add_one[(((out.numel()) + 127) // 128,)](a, b, out, n_elements=out.numel(), " \
           "BLOCK_SIZE=128)" in v128


def test_mask_vectorize_turns_a_guard_into_the_mask() -> None:
    text = HEAD + ("@triton.jit\ndef k(x_ptr, y_ptr, n):\n    i = tl.program_id(0)\n"
                   "    if i >= n:\n        return\n"
                   "    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2)\n\n\n"
                   "def run(x, y):\n    grid = (x.numel() + 7,)\n    k[grid](x, y, x.numel())\n")
    variant = _variants("triton_mask_vectorize", text)[0]
    assert "return" not in variant.split("def run")[0] and "    mask = i < n\n" in variant
    assert "tl.load(x_ptr + i, mask=(i < n) & mask)" in variant
    assert "grid = (((x.numel() + 7) + 127) // 128,)" in variant
    assert "k[grid](x, y, x.numel(), BLOCK_SIZE=128)" in variant
    reduction = HEAD + ("@triton.jit\ndef k(x_ptr, y_ptr):\n    i = tl.program_id(0)\n"
                        "    tl.store(y_ptr + i, tl.sum(tl.load(x_ptr + i), 0))\n\n\n"
                        "def run(x, y):\n    k[(4,)](x, y)\n")
    assert "mixes elements" in _not_applicable("triton_mask_vectorize", reduction)
    block = HEAD + ("@triton.jit\ndef k(x_ptr, B: tl.constexpr):\n    i = tl.program_id(0)\n"
                    "    tl.store(x_ptr + i * B + tl.arange(0, B), 1.0)\n\n\n"
                    "def run(x):\n    k[(4,)](x, B=16)\n")
    assert "already a block kernel" in _not_applicable("triton_mask_vectorize", block)
    assert "grid is not a one-element tuple" in _not_applicable("triton_mask_vectorize",
                                                                 _read("add_relu.py"))


def test_operators_do_not_cross_languages() -> None:
    triton_text = _read("add_relu.py")
    for cuda_op in ("block_size", "unroll_pragma"):
        assert "a Triton program" in _not_applicable(cuda_op, triton_text)
    cu = ("__global__ void k(float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) x[i] = 0.f;\n}\n")
    load_inline = (Path(__file__).parents[2] / "data" / "kernelbench_mutation"
                   / "softmax_row.py").read_text()
    for op in TRITON_OPS:
        assert "not a Triton program" in _not_applicable(op, cu)
        assert "not a Triton program" in _not_applicable(op, load_inline)
        # called directly (no dispatch), an operator says so too
        assert "not a Triton program" in registry()[op].func(cu).not_applicable  # type: ignore[operator]


def test_the_python_check_rejects_broken_text_without_running_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    assert check_python(f"open({str(marker)!r}, 'w').write('x')\n") == (True, "")
    assert not marker.exists()  # compiled to bytecode, never executed
    ok, log = check_python("def f(:\n    pass\n")
    assert not ok and "error: not valid Python" in log
    b = Builder("triton_block_size", "x = 1\n", check=check_python)
    assert not b.add("x = (\n", new=1) and "does not compile" in b.result.rejected[0]


def test_dry_runs_apply_the_same_edits() -> None:
    text = _read("matmul_fp16acc.py")
    with dry_run():
        dry = [v.source for v in run_operator("triton_grouped_ordering", text).variants]
    assert dry == [v.source for v in run_operator("triton_grouped_ordering", text).variants]


def test_cli_mutates_a_triton_file_and_lists_the_language(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "v.py"
    res = runner.invoke(app, ["mutate", str(DATA / "add_relu.py"), "--op", "triton_block_size",
                              "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["result"]["variants"][0]["promised"] == {"triton.block_elements": "set"}
    assert "BLOCK_SIZE=512" in out.read_text()
    res = runner.invoke(app, ["mutate", str(DATA / "add_relu.py"), "--op", "unroll_pragma"])
    assert res.exit_code == 1 and "a Triton program" in res.output
    res = runner.invoke(app, ["mutate", "--list", "--json", "--state", str(tmp_path)])
    rows = {r["operator"]: r for r in json.loads(res.output)}
    assert rows["triton_fuse_epilogue"]["language"] == "triton"
    assert rows["block_size"]["language"] == "cuda"
