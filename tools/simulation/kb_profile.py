"""Emulator profiles of a KernelBench candidate on the CPU path, cached by content hash.

:func:`profile_candidate` runs what verification runs, with the profile variant of the
candidate's CUDA: the same static checks (``verify._static``), its ``load_inline`` extensions
built by ``cpu_build.build_cpu_extension(..., profile=True)`` (the rewriter's counters per
access, branch and operation; docs/EMULATOR.md "Profiles"), the reference child for the inputs
(``verify._reference``, shared with verification's cache), then one forward of ``ModelNew``
in the same jail (:mod:`profile_child`). It does that at two reduced sizes (the CPU path's
work budget and a quarter of it, :meth:`Problem.shrunk`, moved onto one ray towards the
problem's sizes where the shrink's floor bends them: :func:`profile_sizes`, :mod:`kb_sizes`) so
counters can be extrapolated to the problem's own sizes (:mod:`kb_profile_features`).
Counters are per kernel (summed over its launches), as ``tools/verify/profile.py`` sums them
for corpus programs.

A candidate that cannot be profiled (no CUDA extension, refused by an anti-hacking check other
than library delegation, unsupported construct, build failure, a fault while running) gives a :class:`KbProfile` with
``error`` set to the reason, never zeros. Results are cached under
``~/.cache/structcover/kb_profiles`` by the hash of (candidate, problem text, sizes, seed,
profiler version, :data:`CACHE_VERSION`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from structcover.tools.kernelbench.problem import Problem

#: Bumped when the entry format or the size plan changes.
CACHE_VERSION = 2  # 2: torch_ops (torch's own operators' traffic in forward)
#: The cache folder.
CACHE_DIR = Path.home() / ".cache" / "structcover" / "kb_profiles"
#: The smaller measured size has this fraction of the larger one's work (input elements).
SMALL_FRACTION = 0.25
#: Multiples of the budget tried for the larger size when the floor makes the two sizes equal
#: (each a 4x step of emulated work; a problem still equal at 16x keeps one size, and its
#: counters are extrapolated linearly: ``kb_profile_features._exponent``).
LARGE_SCALES = (4.0, 16.0)

_DTYPE_BYTES = {"float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4,
                "float16": 2, "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}


@dataclass
class KbProfile:
    """Counters of one candidate on one problem at two reduced sizes (larger first)."""

    candidate: str
    problem: str
    #: The problem's own sizes (where the timing model predicts).
    full_sizes: dict[str, int]
    sizes: list[dict[str, int]] = field(default_factory=list)
    #: Per size: kernel name -> counters summed over its launches (MAXED ones maxed).
    kernels: list[dict[str, dict[str, int]]] = field(default_factory=list)
    #: Per size: elements and bytes of the outputs and of the inputs, and the problem's work.
    output_elements: list[int] = field(default_factory=list)
    output_bytes: list[int] = field(default_factory=list)
    input_bytes: list[int] = field(default_factory=list)
    work: list[float] = field(default_factory=list)
    #: Per size: torch's own operators in forward (fills, copies), ``op -> {"launches",
    #: "read_bytes", "write_bytes"}`` (``tools/kernelbench/torch_traffic.py``).
    torch_ops: list[dict[str, dict[str, int]]] = field(default_factory=list)
    profiler: str = ""
    #: Why there is no profile ("" when it is real).
    error: str = ""
    #: Set when the candidate delegates part of its work to torch (a verdict rejects it, a
    #: measurement does not: the torch work is in ``torch_ops``): the checks' detail.
    delegation: str = ""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KbProfile:
        """Inverse of :meth:`to_json`."""
        return cls(**data)


def sum_launches(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Kernel name -> its launches' counters summed (maxima maxed), ``launches`` counted."""
    from structcover.tools.verify.profile import MAXED, SUMMED

    out: dict[str, dict[str, int]] = {}
    for row in rows:
        name = str(row.get("kernel", ""))
        acc = out.setdefault(name, {"launches": 0, **{k: 0 for k in (*SUMMED, *MAXED)}})
        acc["launches"] += 1
        for k in SUMMED:
            acc[k] += int(row.get(k, 0))
        for k in MAXED:
            acc[k] = max(acc[k], int(row.get(k, 0)))
    return out


def _tensor_bytes(meta: list[dict[str, Any]]) -> tuple[int, int]:
    """(elements, bytes) of the tensors in a child's input/output metadata."""
    elems = nbytes = 0
    for m in meta:
        if m.get("kind", "tensor") == "tensor" and "shape" in m:
            n = math.prod(int(d) for d in m["shape"])
            elems += n
            nbytes += n * _DTYPE_BYTES.get(str(m.get("dtype")), 4)
    return elems, nbytes


def _budget_pair(problem: Problem, budget: float) -> list[dict[str, int]]:
    """(larger, smaller) at ``budget`` and ``SMALL_FRACTION`` of it, the larger at
    :data:`LARGE_SCALES` times the budget where the floor makes the two equal."""
    small = problem.shrunk(budget * SMALL_FRACTION)
    large = problem.shrunk(budget)
    if large == dict(problem.sizes) or problem.work(large) > problem.work(small):
        return [large, small]
    for scale in LARGE_SCALES:
        bigger = problem.shrunk(budget * scale)
        if problem.work(bigger) > problem.work(small):
            return [bigger, small]
    return [large, small]


def profile_sizes(problem: Problem, budget: float) -> list[dict[str, int]]:
    """The two measured size sets (larger first), on one ray towards the problem's sizes.

    First the pair at ``budget`` and ``SMALL_FRACTION`` of it. Where every scalable size is at
    :meth:`Problem.shrunk`'s floor of 16 already (a 4-D norm's 16^4 is the whole 2^16 budget),
    the larger is measured at :data:`LARGE_SCALES` times the budget instead, the first that gives
    more work: two equal sizes give no growth to extrapolate with. Where the floor or the kept
    alignment leaves the pair off the ray towards the problem's own sizes (some sizes grow
    between the two and others do not: ``kb_sizes.ray_skew``), a pair on the ray at a few times
    the budget replaces it (``kb_sizes.ray_pair``) when one exists within the cost cap. A problem
    within the budget is measured once, at its own sizes.
    """
    from structcover.tools.simulation.kb_sizes import RAY_TOLERANCE, ray_pair, ray_skew

    pair = _budget_pair(problem, budget)
    full = dict(problem.sizes)
    if pair[0] == full or ray_skew(full, pair[0], pair[1]) <= RAY_TOLERANCE:
        return pair
    return ray_pair(problem, budget, SMALL_FRACTION, pair) or pair


def cache_key(candidate_text: str, problem: Problem, sizes: list[dict[str, int]],
              seed: int) -> str:
    """Content key of a profile (candidate, problem, sizes, seed, profiler, and the child that
    runs the problem: a fix there, such as shapes derived from shrunk sizes, must not leave
    the failures it fixes cached)."""
    from structcover.tools.simulation.profiles import profiler_version

    text = json.dumps([CACHE_VERSION, candidate_text, problem.text, sizes, seed,
                       profiler_version(), _child_version()], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@functools.lru_cache(maxsize=1)
def _child_version() -> str:
    """Hash of the sources of the jailed child that loads the problem and runs the forward."""
    import structcover.tools.kernelbench as kb

    root = Path(kb.__file__).parent
    digest = hashlib.sha256()
    for name in ("child.py", "profile_child.py", "sizes.py", "child_io.py"):
        path = root / name
        digest.update(path.read_bytes() if path.exists() else b"missing:" + name.encode())
    return digest.hexdigest()[:12]


def _build(exts: list[Any], folder: Path) -> tuple[dict[str, str], list[str], str]:
    """Profile builds of every extension: ({key: library}, [runtime libraries], error)."""
    from structcover.tools.kernelbench.cpu_build import (
        ExtensionBuildError,
        UnsupportedConstruct,
        build_cpu_extension,
    )

    built: dict[str, str] = {}
    runtimes: list[str] = []
    for ext in exts:
        try:
            lib = build_cpu_extension(ext, folder / ext.key(), profile=True)
        except UnsupportedConstruct as exc:
            return {}, [], f"unsupported: {getattr(exc, 'construct', None) or exc}"[:300]
        except ExtensionBuildError as exc:
            log = str(getattr(exc, "log", exc)).strip().splitlines()
            return {}, [], f"compile-error: {ext.name}: {log[0] if log else ''}"[:300]
        built[ext.key()] = str(lib)
        info = json.loads((folder / ext.key() / "build.json").read_text())
        runtimes.append(str(folder / ext.key() / info["runtime"]))
    return built, runtimes, ""


def _measure_one(candidate_text: str, problem: Problem, sizes: dict[str, int], seed: int,
                 built: dict[str, str], runtimes: list[str], work: Path,
                 timeout_s: float) -> tuple[dict[str, Any], str]:
    """The profile child's result at ``sizes`` and an error ("" when it ran)."""
    from structcover.tools.kernelbench.sandbox import run_child
    from structcover.tools.kernelbench.verify import _copy_inputs, _reference

    tag = hashlib.sha256(json.dumps(sizes, sort_keys=True).encode()).hexdigest()[:10]
    ref, ref_dir = _reference(problem, sizes, seed, 1, "cpu", False, timeout_s, work)
    if not ref.ok:
        return {}, "reference-failed: " + str(ref.result.get("detail", ""))[:200]
    job_dir = work / f"job-{tag}"
    job_dir.mkdir()
    shutil.copyfile(problem.path, job_dir / "problem.py")
    (job_dir / "candidate.py").write_text(candidate_text, encoding="utf-8",
                                          errors="surrogatepass")
    inputs_dir = _copy_inputs(ref.result, ref_dir, job_dir / "inputs")
    job = {"mode": "profile", "device": "cpu", "problem_file": str(job_dir / "problem.py"),
           "candidate_file": str(job_dir / "candidate.py"), "sizes": sizes, "seed": seed,
           "extensions": built, "inputs_dir": str(inputs_dir), "runtimes": runtimes}
    libs = sorted({str(Path(p).parent) for p in built.values()})
    out = run_child(job, job_dir, job_dir / "out", device="cpu", ro=[Path(p) for p in libs],
                    timeout_s=timeout_s, module="structcover.tools.kernelbench.profile_child")
    if not out.ok:
        failure = out.result.get("failure") or "crash"
        return {}, f"{failure}: {str(out.result.get('detail', ''))[:240]}"
    if not out.result.get("launches"):
        return {}, "no-launch: forward launched no kernel of the candidate's extensions"
    return out.result, ""


def delegation_only(candidate_text: str) -> bool:
    """Whether library delegation is the only hard check the candidate fails.

    Such a program is refused as a *kernel* answer, but it runs, and what it costs is
    measurable: its kernels by the emulator's counters, its torch work (``.sum()`` of partial
    sums, ``torch.mean`` in ``forward``) by the profile child's dispatch meter. Every other
    hard failure (cached outputs, timing or stream tampering...) would make a measurement
    misleading, so those stay unprofiled.
    """
    from structcover.tools.verify.hacking import hard_failures
    from structcover.tools.verify.hacking_py import run_python_checks

    try:
        names = {r.name for r in hard_failures(run_python_checks(candidate_text))}
    except (SyntaxError, ValueError):
        return False
    return names == {"no_library_delegation"}


def _extensions(candidate_text: str) -> tuple[list[Any], str]:
    """(the candidate's ``load_inline`` extensions, "" ) or ([], why they cannot be built)."""
    from structcover.tools.kernelbench.candidate import UnresolvedInline, find_inline_extensions

    try:
        return find_inline_extensions(candidate_text), ""
    except UnresolvedInline as exc:
        return [], f"unsupported: {exc}"[:300]


def measure(candidate_text: str, problem: Problem, *, budget: float | None = None,
            seed: int = 0, timeout_s: float = 300.0) -> KbProfile:
    """Profile ``candidate_text`` on ``problem`` at the two sizes; never raises on the candidate.

    Raises:
        SandboxUnavailable: No jail here (an environment problem, not the candidate's).
    """
    from structcover.tools.kernelbench.verify import DEFAULT_WORK_BUDGET, _static
    from structcover.tools.simulation.profiles import profiler_version

    sizes = profile_sizes(problem, budget or DEFAULT_WORK_BUDGET)
    prof = KbProfile(candidate=hashlib.sha256(candidate_text.encode("utf-8", "surrogatepass"))
                     .hexdigest()[:16], problem=problem.id, full_sizes=dict(problem.sizes),
                     sizes=sizes, profiler=profiler_version())
    exts, _flags, decided = _static(candidate_text, problem, seed)
    if decided is not None and decided.failure == "hacking" and delegation_only(candidate_text):
        exts, why = _extensions(candidate_text)
        if why:
            prof.error = why
            return prof
        prof.delegation, decided = decided.detail[:300], None
    if decided is not None:
        prof.error = f"{decided.failure}: {decided.detail}"[:300]
        return prof
    if not exts:
        prof.error = "no-extension: no load_inline CUDA extension to profile (pure torch/Triton)"
        return prof
    with tempfile.TemporaryDirectory(prefix="structcover-kbprof-") as tmp:
        work = Path(tmp)
        built, runtimes, err = _build(exts, work / "build")
        result: dict[str, Any] = {}
        for i, s in enumerate(sizes):
            if err:
                break
            if i == 0 or s != sizes[i - 1]:  # a problem already within the budget: one run
                result, err = _measure_one(candidate_text, problem, s, seed, built, runtimes,
                                           work, timeout_s)
            if not err:
                out_el, out_b = _tensor_bytes(result["outputs"])
                _, in_b = _tensor_bytes(result["inputs"])
                prof.kernels.append(sum_launches(result["launches"]))
                prof.output_elements.append(out_el)
                prof.output_bytes.append(out_b)
                prof.input_bytes.append(in_b)
                prof.work.append(problem.work(s))
                prof.torch_ops.append(result.get("torch_ops", {}))
    if err:
        prof.error, prof.kernels, prof.torch_ops = err, [], []
        prof.output_elements, prof.output_bytes, prof.input_bytes, prof.work = [], [], [], []
    return prof


def profile_candidate(candidate_text: str, problem: Problem, *, budget: float | None = None,
                      seed: int = 0, timeout_s: float = 300.0, cache_dir: Path | None = None,
                      use_cache: bool = True) -> KbProfile:
    """:func:`measure`, from the cache when the same candidate, problem and sizes were profiled.

    Failed profiles are cached too (their reason is deterministic), except where the child
    ran out of time (the machine's load, not the candidate's text, may have decided that).
    """
    from structcover.tools.kernelbench.verify import DEFAULT_WORK_BUDGET

    sizes = profile_sizes(problem, budget or DEFAULT_WORK_BUDGET)
    folder = Path(cache_dir) if cache_dir is not None else CACHE_DIR
    path = folder / f"{cache_key(candidate_text, problem, sizes, seed)}.json" if use_cache \
        else None
    if path is not None and path.is_file():
        try:
            cached = KbProfile.from_json(json.loads(path.read_text()))
            # Entries refused for delegation alone before such programs were measured.
            if not (cached.error.startswith("hacking") and delegation_only(candidate_text)):
                return cached
        except (ValueError, TypeError):
            pass  # a torn or older entry: measure again
    prof = measure(candidate_text, problem, budget=budget, seed=seed, timeout_s=timeout_s)
    if path is not None and not prof.error.startswith("timeout"):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(prof.to_json()))
        tmp.replace(path)
    return prof
