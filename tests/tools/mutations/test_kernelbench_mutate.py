"""Operators on KernelBench candidates: applied inside the load_inline CUDA, compiled as device
code (torch/extension.h not needed), re-embedded into a valid candidate."""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

import pytest

from structcover.tools.compiler.service import compile_program
from structcover.tools.kernelbench.candidate import find_inline_extensions
from structcover.tools.mutations.base import get_operator
from structcover.tools.mutations.embedded import (
    apply_embedded,
    is_kernelbench_candidate,
    run_operator,
)

DATA = Path(__file__).parents[2] / "data" / "kernelbench_mutation"

pytestmark = pytest.mark.nvcc


def _read(name: str) -> str:
    return (DATA / name).read_text()


def _model_new(text: str) -> str:
    tree = ast.parse(text)
    return ast.dump(next(n for n in tree.body if isinstance(n, ast.ClassDef)
                         and n.name == "ModelNew"))


def test_variants_are_candidates_whose_model_uses_the_mutated_kernel() -> None:
    text = _read("softmax_row.py")
    cuda = find_inline_extensions(text)[0].cuda_sources[0]
    direct = get_operator("block_size").func(cuda)
    result = apply_embedded("block_size", text)
    assert result.variants and len(result.variants) == len(direct.variants)
    for variant, inner in zip(result.variants, direct.variants, strict=True):
        ext = find_inline_extensions(variant.source)[0]
        assert ext.cuda_sources[0] == inner.source != cuda  # the mutated kernel, embedded
        assert ext.name == "softmax_row" and ext.functions == ["softmax_cuda"]
        assert _model_new(variant.source) == _model_new(text)
        # Only lines of the literal changed: everything before and after it is identical.
        changed = [i for i, (a, b) in enumerate(zip(text.splitlines(), variant.source.splitlines(),
                                                    strict=False)) if a != b]
        start = text.index('cuda_source = """')
        end = text.index('"""', start + 20)
        first, last = text[:start].count("\n"), text[:end].count("\n")
        assert changed and all(first <= i <= last for i in changed)
        assert variant.params["source"] == "softmax_row.cuda_sources[0]"
        assert variant.operator == "block_size"


def test_every_candidate_of_llm_style_kernels_compiles() -> None:
    """The compile check slices device code: torch/extension.h, TORCH_CHECK, getCurrentCUDAStream
    and c10 guards in the host wrapper no longer drop candidates (whole-file nvcc dropped all)."""
    tried = 0
    for name in ("softmax_row.py", "layernorm_warp.py", "relu_dispatch.py"):
        text = _read(name)
        for op in ("block_size", "unroll_pragma", "coarsen"):
            result = apply_embedded(op, text)
            assert not result.rejected, (name, op, result.rejected)
            tried += len(result.variants)
    assert tried >= 5


def test_a_dispatch_template_kernel_is_compiled_not_skipped() -> None:
    """AT_DISPATCH's scalar_t launch is instantiated (as float), so the body is checked."""
    cuda = find_inline_extensions(_read("relu_dispatch.py"))[0].cuda_sources[0]
    result = compile_program(cuda, arch="sm_90")
    assert result.ok and result.kernels_emitted == 1, result.notes
    broken = cuda.replace("static_cast<scalar_t>(0)", "static_cast<scalar_t>(undeclared_name)")
    assert not compile_program(broken, arch="sm_90").ok


def test_torch_types_in_device_code_are_rejected_with_the_reason() -> None:
    result = apply_embedded("block_size", _read("accessor_scale.py"))
    assert not result.variants and result.rejected
    assert all("torch::PackedTensorAccessor32" in r and "torch's headers" in r
               for r in result.rejected)


def test_a_candidate_without_embeddable_cuda_says_why() -> None:
    text = _read("softmax_row.py").replace('cuda_sources=cuda_source',
                                           'cuda_sources=open("k.cu").read()')
    assert "cannot be re-embedded" in (apply_embedded("block_size", text).not_applicable or "")
    pure = "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
    assert "no load_inline" in (apply_embedded("block_size", pure).not_applicable or "")


def test_run_operator_dispatches_on_the_format() -> None:
    text = _read("softmax_row.py")
    cuda = find_inline_extensions(text)[0].cuda_sources[0]
    assert is_kernelbench_candidate(text) and not is_kernelbench_candidate(cuda)
    assert [v.source for v in run_operator("block_size", cuda).variants] == \
        [v.source for v in get_operator("block_size").func(cuda).variants]
    assert all(is_kernelbench_candidate(v.source)
               for v in run_operator("block_size", text).variants)
    diff = list(difflib.unified_diff(text.splitlines(), run_operator(
        "block_size", text).variants[0].source.splitlines(), lineterm="", n=0))
    assert any("threads" in ln for ln in diff if ln.startswith("+"))


def test_mutate_command_writes_a_mutated_candidate(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from structcover.cli import app

    out = tmp_path / "mutant.py"
    res = CliRunner().invoke(app, ["mutate", str(DATA / "softmax_row.py"), "--op", "block_size",
                                   "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    written = out.read_text()
    ext = find_inline_extensions(written)[0]
    assert ext.cuda_sources[0] != find_inline_extensions(_read("softmax_row.py"))[0].cuda_sources[0]
    assert _model_new(written) == _model_new(_read("softmax_row.py"))
