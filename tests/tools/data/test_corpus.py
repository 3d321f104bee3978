"""The shipped sample corpus: specs validate, programs follow the convention, and compile."""

from __future__ import annotations

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from structcover.schema import ScalarArg, TensorArg, eval_size_expr
from structcover.tools.compiler.toolchain import find_nvcc
from structcover.tools.data.corpus import (
    CorpusProgram,
    TaskFamily,
    corpus_root,
    load_corpus,
    load_task,
)

REQUIRED_FAMILIES = {
    "vector_add", "saxpy", "reduction", "transpose", "gemm", "softmax", "layernorm", "conv1d",
    "histogram", "prefix_scan", "spmv_csr", "gemv",
}
#: Headers a program may include (the program convention).
ALLOWED_INCLUDES = {"cuda_runtime.h", "cuda_fp16.h", "cooperative_groups.h", "stdint.h", "math.h"}
LAUNCHER = re.compile(r'extern\s+"C"\s+int\s+(\w+)\s*\(([^)]*)\)\s*\{')
INCLUDE = re.compile(r"^\s*#\s*include\s*[<\"]([^>\"]+)[>\"]", re.MULTILINE)

CORPUS = load_corpus()
PROGRAMS = [(fam, prog) for fam in CORPUS for prog in fam.programs]


def _ids(items: list[tuple[TaskFamily, CorpusProgram]]) -> list[str]:
    return [f"{fam.name}/{prog.name}" for fam, prog in items]


def _params(text: str) -> list[tuple[str, str]]:
    """Split a C parameter list into (normalized type, name) pairs."""
    out = []
    for part in text.split(","):
        tokens = re.findall(r"[A-Za-z_]\w*|\*", part.replace("__restrict__", ""))
        out.append((" ".join(tokens[:-1]), tokens[-1]))
    return out


def test_corpus_has_the_required_task_families() -> None:
    names = {fam.name for fam in CORPUS}
    assert REQUIRED_FAMILIES <= names, f"missing families: {sorted(REQUIRED_FAMILIES - names)}"
    assert len(names) >= 12


def test_every_task_spec_validates_and_names_an_existing_reference() -> None:
    seen: set[str] = set()
    for fam in CORPUS:
        for path in sorted(fam.root.glob("task*.yaml")):
            spec = load_task(path)  # raises on an invalid spec
            assert spec.family == fam.name, path
            assert spec.task_id not in seen, f"duplicate task id {spec.task_id}"
            seen.add(spec.task_id)
            assert spec.reference, f"{path}: no reference"
            assert (corpus_root() / spec.reference).is_file(), f"{path}: {spec.reference} missing"
            assert (corpus_root() / spec.reference).resolve() == fam.reference.path.resolve()
            # Every shape and integer scalar evaluates to a positive size.
            for arg in spec.args:
                exprs = arg.shape if isinstance(arg, TensorArg) else (
                    [arg.value] if arg.ctype not in ("float", "double") else [])
                assert all(eval_size_expr(e, spec.sizes) > 0 for e in exprs), (path, arg.name)


def test_spmv_family_covers_three_csr_patterns_with_consistent_nnz() -> None:
    fam = next(f for f in CORPUS if f.name == "spmv_csr")
    by_pattern = {t.generator_params["pattern"]: t for t in fam.tasks}
    assert set(by_pattern) == {"diagonal", "banded", "random"}
    for pattern, spec in by_pattern.items():
        assert spec.generator == "csr"
        n, nnz = spec.sizes["N"], spec.sizes["NNZ"]
        if pattern == "diagonal":
            expected = n
        elif pattern == "banded":
            b = spec.generator_params["half_width"]
            expected = n * (2 * b + 1) - b * (b + 1)
        else:
            expected = n * spec.generator_params["per_row"]
        assert nnz == expected, (pattern, nnz, expected)
        structured = {a.name for a in spec.tensors if a.distribution == "structured"}
        assert structured == {"row_ptr", "col_idx", "vals"}


def test_some_tasks_have_sizes_that_are_not_block_multiples() -> None:
    # Bounds checks only matter when a size leaves a partial block.
    odd = [t.task_id for f in CORPUS for t in f.tasks if any(v % 32 for v in t.sizes.values())]
    assert len(odd) >= 5, odd


def test_tolerances_fit_the_output_types() -> None:
    tasks = {t.task_id: t for f in CORPUS for t in f.tasks}
    assert tasks["histogram"].tolerance("int32") == (0.0, 0.0)  # exact counts
    # Order-dependent float sums need a looser tolerance than the fp32 default.
    for task_id in ("reduction", "prefix_scan"):
        atol, rtol = tasks[task_id].tolerance("float32")
        assert atol > 1e-4 and rtol > 1e-4, task_id


@pytest.mark.parametrize("fam", CORPUS, ids=[f.name for f in CORPUS])
def test_each_family_has_four_described_distinct_variants(fam: TaskFamily) -> None:
    assert len(fam.variants) >= 4, f"{fam.name}: {len(fam.variants)} variants"
    descriptions = []
    for prog in fam.variants:
        first = prog.source.splitlines()[0]
        assert first.startswith("// variant: "), f"{prog.path}: first line {first!r}"
        assert len(prog.description) > 20, prog.path
        descriptions.append(prog.description)
    assert len(set(descriptions)) == len(descriptions), f"{fam.name}: repeated descriptions"
    sources = {re.sub(r"\s+", " ", p.source) for p in fam.programs}
    assert len(sources) == len(fam.programs), f"{fam.name}: identical programs"


@pytest.mark.parametrize(("fam", "prog"), PROGRAMS, ids=_ids(PROGRAMS))
def test_program_defines_the_task_launcher_with_its_exact_signature(
        fam: TaskFamily, prog: CorpusProgram) -> None:
    found = LAUNCHER.findall(prog.source)
    assert len(found) == 1, f"{prog.path}: {len(found)} extern \"C\" launchers"
    name, params = found[0]
    for spec in fam.tasks:
        assert name == spec.launcher
        expected = LAUNCHER.search(spec.c_signature() + " {")
        assert expected is not None
        assert _params(params) == _params(expected.group(2)), (prog.path, spec.task_id)
        n_args = len(spec.args)
        assert len(_params(params)) == n_args + 1
        assert [p[1] for p in _params(params)][:n_args] == [a.name for a in spec.args]
        assert all(isinstance(a, (TensorArg, ScalarArg)) for a in spec.args)


@pytest.mark.parametrize(("fam", "prog"), PROGRAMS, ids=_ids(PROGRAMS))
def test_program_follows_the_host_convention(fam: TaskFamily, prog: CorpusProgram) -> None:
    src = prog.source
    assert "__global__" in src and "<<<" in src, f"{prog.path}: defines or launches no kernel"
    assert "return (int)cudaGetLastError();" in src or "return (int)err;" in src, prog.path
    includes = set(INCLUDE.findall(src))
    assert includes <= ALLOWED_INCLUDES, f"{prog.path}: includes {sorted(includes - ALLOWED_INCLUDES)}"
    # Launches go on the stream the launcher receives.
    for cfg in re.findall(r"<<<(.*?)>>>", src):
        assert cfg.replace(" ", "").endswith(",stream"), f"{prog.path}: launch <<<{cfg}>>> ignores stream"
    if "cudaMalloc" in src:
        assert "cudaFree" in src, f"{prog.path}: scratch buffer never freed"


def _nvcc(prog: CorpusProgram, out_dir: Path, host: bool) -> tuple[Path, int, str]:
    """Compile one program for sm_80 and sm_90 in a single nvcc call.

    ``host``: an object file, the host launcher compiled by the host compiler too; else a
    fatbin: nvcc's front end still parses and checks the whole file, host code included, but
    the host compiler does not run (half the time per program).
    """
    path, stem = prog.path, out_dir / f"{prog.family}_{prog.name}"
    mode = ["-c", "-o", f"{stem}.o"] if host else ["--fatbin", "-o", f"{stem}.fatbin"]
    cmd = [str(NVCC), "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
           *mode, str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return path, proc.returncode, proc.stderr


def _compile_all(programs: list[CorpusProgram], out_dir: Path, host: bool = True) -> list[str]:
    # Two workers: the machine's cores are shared, and nvcc is mostly single-threaded.
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: _nvcc(p, out_dir, host), programs))
    return [f"{path}: rc={rc}\n{err[-1500:]}" for path, rc, err in results if rc != 0]


#: nvcc from the PATH, CUDA_HOME or the nvidia-cuda-nvcc wheels (the `cuda` extra).
NVCC = find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc (toolkit or nvidia-cuda-nvcc wheels)")


#: A quick default-run sample: one program per allowed CUDA header (runtime, fp16, cooperative groups).
SMOKE = {("vector_add", "reference"), ("relu_fp16", "half2_tail"), ("reduction", "cg_tiled_partition")}


@needs_nvcc
def test_header_sample_compiles_for_sm80_and_sm90(tmp_path: Path) -> None:
    programs = [prog for fam, prog in PROGRAMS if (fam.name, prog.name) in SMOKE]
    assert len(programs) == len(SMOKE)
    failures = _compile_all(programs, tmp_path)
    assert not failures, "\n".join(failures)
    assert len(list(tmp_path.glob("*.o"))) == len(programs)


@pytest.mark.slow
@needs_nvcc
def test_every_program_compiles_for_sm80_and_sm90(tmp_path: Path) -> None:
    # Device code for both targets; the host side is compiled for the header sample below
    # (and by g++ for every program in the emulator's tests).
    programs = [prog for _, prog in PROGRAMS]
    failures = _compile_all(programs, tmp_path, host=False)
    assert not failures, "\n".join(failures)
    assert len(list(tmp_path.glob("*.fatbin"))) == len(programs)


def test_corpus_loads_are_cached_until_a_file_changes(tmp_path: Path) -> None:
    import shutil

    from structcover.tools.data.corpus import corpus_root, load_corpus

    root = tmp_path / "corpus"
    shutil.copytree(corpus_root() / "saxpy", root / "saxpy")
    first = load_corpus(root)
    again = load_corpus(root)
    assert again == first and again is not first  # a fresh list of the cached families
    assert again[0] is first[0]
    spec = root / "saxpy" / "task.yaml"
    spec.write_text(spec.read_text().replace(first[0].tasks[0].task_id, "saxpy_renamed", 1))
    assert load_corpus(root)[0].tasks[0].task_id == "saxpy_renamed"  # re-read after a change
