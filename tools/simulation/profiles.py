"""Measured emulator profiles of a program on a task at two reduced sizes, cached.

A :class:`MeasuredProfile` holds what the timing model needs and nothing static: the CPU
emulator's counters per kernel (``tools/verify/profile.py``) at two sizes — the task's own
sizes and every size in its ``size_ranges`` halved (clamped to the range; a ``csr`` task's
NNZ follows N as in verification) — and ptxas' registers and shared memory per kernel for
each architecture of the spec table (``tools/compiler``, NVRTC). Two sizes let each counter
be extrapolated to the model's size as a power of the size scale (:func:`extrapolate`), so a
kernel whose grid is fixed (grid-stride) keeps its block count while an elementwise kernel's
grows with the data.

Profiling costs a sandboxed build and two emulator runs per program (about 3 s cold on the
2-core machine), too slow for the demo's ~300 corpus programs and launch-config mutants, so
profiles are cached by program hash + task + sizes + :data:`CACHE_VERSION`:

* a packaged cache of the sample corpus and simulate's mutants (``profile_cache.json`` beside
  this module, written by ``scripts/build_profile_cache.py`` with our own profiler; each
  entry records the profiler version, the hash of the profiler's sources, so a stale entry is
  reported, never silently trusted as current), and
* a user cache (``~/.cache/structcover/profiles``) for anything else, profiled at run time.

A program whose profile fails keeps an entry with ``error`` set (the reason), never zeros.
"""

from __future__ import annotations

import hashlib
import json
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from structcover.schema import TaskSpec, content_hash, eval_size_expr

#: Bumped when the entry format or the size plan changes (old entries then miss).
CACHE_VERSION = 1
#: Architectures whose ptxas resources each entry records (the spec table's GPUs).
ARCHES = ("sm_90", "sm_80", "sm_89", "sm_86")
#: The packaged cache (sample corpus + simulate's mutants).
PACKAGED = Path(__file__).with_name("profile_cache.json")
#: The user cache folder (profiles measured at run time).
USER_CACHE = Path.home() / ".cache" / "structcover" / "profiles"
#: Programs profiled at once at run time (each waits on a sandboxed build and run).
PROFILE_THREADS = 2


def profiler_version() -> str:
    """Hash of the profiler's sources (rewriter and its op edits, runtime, report): what made
    the counters. (The op edits and the runtime header were once left out, so a change of
    what is counted kept old counts in every cache.)"""
    import structcover.tools.verify as verify

    root = Path(verify.__file__).parent
    digest = hashlib.sha256()
    for rel in ("profile.py", "profile_rewrite.py", "profile_ops.py", "runtime/sc_prof.cpp",
                "runtime/sc_prof.hpp"):
        path = root / rel
        digest.update(path.read_bytes() if path.exists() else b"missing:" + rel.encode())
    return digest.hexdigest()[:12]


def scaled_sizes(spec: TaskSpec, factor: float) -> dict[str, int]:
    """The task's sizes with every size in ``size_ranges`` times ``factor`` (rounded, kept in
    its range; for the model's large sizes pass ``clamp=False`` via :func:`target_sizes`)."""
    return _scale(spec, factor, clamp=True)


def _scale(spec: TaskSpec, factor: float, *, clamp: bool) -> dict[str, int]:
    from structcover.tools.verify.inputs import csr_nnz

    sizes = dict(spec.sizes)
    for name, (low, high) in spec.size_ranges.items():
        value = max(1, round(spec.sizes[name] * factor))
        sizes[name] = min(max(value, low), high) if clamp else value
    if spec.generator == "csr" and "N" in spec.size_ranges and "NNZ" in sizes:
        sizes["NNZ"] = csr_nnz(str(spec.generator_params.get("pattern")), sizes["N"],
                               spec.generator_params)
    return sizes


def profile_sizes(spec: TaskSpec) -> tuple[dict[str, int], dict[str, int]]:
    """The two measured size sets: the task's own and the ranged sizes halved."""
    return dict(spec.sizes), scaled_sizes(spec, 0.5)


def size_ratio(spec: TaskSpec, large: dict[str, int], small: dict[str, int]) -> float:
    """Geometric mean of large / small over the ranged sizes (1 when nothing is ranged)."""
    names = [n for n in spec.size_ranges if small.get(n, 0) > 0]
    if not names:
        return 1.0
    return math.exp(sum(math.log(large[n] / small[n]) for n in names) / len(names))


#: Elements of the largest buffer at the model's size (as the analytic model used).
TARGET_ELEMENTS = 2 ** 24


def target_scale(spec: TaskSpec, target_elements: float = TARGET_ELEMENTS) -> float:
    """Factor ``k`` on the ranged sizes that gives the largest buffer ``target_elements``."""
    ranged = set(spec.size_ranges)
    best, dims = 0, 1
    for t in spec.tensors:
        elems = math.prod(spec.shape_of(t.name))
        if elems > best:
            best = elems
            dims = max(1, sum(1 for e in t.shape if str(e) in ranged))
    if best <= 0 or not ranged:
        return 1.0
    return max(1.0, (target_elements / best) ** (1.0 / dims))


def target_sizes(spec: TaskSpec, target_elements: float = TARGET_ELEMENTS) -> dict[str, int]:
    """The task's sizes at the model's scale (ranged sizes times :func:`target_scale`)."""
    return _scale(spec, target_scale(spec, target_elements), clamp=False)


@dataclass
class MeasuredProfile:
    """Counters of one program on one task at the two sizes, and its ptxas resources."""

    program: str
    task_id: str
    sizes: list[dict[str, int]]
    #: Per size: kernel name -> summed/maxed counters of its launches (profile.py's kernels).
    kernels: list[dict[str, dict[str, int]]] = field(default_factory=list)
    #: Arch -> kernel name -> {"registers": n, "smem_bytes": n}; {} where ptxas gave nothing.
    ptxas: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    profiler: str = ""
    #: Why the profile failed ("" when it is real).
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MeasuredProfile:
        """Inverse of :meth:`to_json`."""
        return cls(**data)


def cache_key(program: str, spec: TaskSpec) -> str:
    """Key of ``program`` (its content hash) on ``spec`` at the two profile sizes."""
    large, small = profile_sizes(spec)
    text = json.dumps([CACHE_VERSION, program, spec.task_id, large, small], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _ptxas(source: str, arches: tuple[str, ...]) -> dict[str, dict[str, dict[str, int]]]:
    from structcover.tools.compiler.service import compile_program

    out: dict[str, dict[str, dict[str, int]]] = {}
    for arch in arches:
        try:
            result = compile_program(source, arch=arch)
        except Exception:  # noqa: BLE001 - a compiler failure leaves the default registers
            out[arch] = {}
            continue
        out[arch] = ({s.kernel: {"registers": s.registers, "smem_bytes": s.smem_bytes}
                      for s in result.stats} if result.ok else {})
    return out


def measure_profile(source: str, spec: TaskSpec, *, arches: tuple[str, ...] = ARCHES,
                    timeout_s: float = 60.0) -> MeasuredProfile:
    """Profile ``source`` on ``spec`` at both sizes in the jail; never raises on the program.

    A build or run failure gives an entry with ``error`` (the reason) and no counters.
    """
    from structcover.tools.verify.profile import ProfileError, profile_program

    sizes = list(profile_sizes(spec))
    entry = MeasuredProfile(program=content_hash(source), task_id=spec.task_id, sizes=sizes,
                            profiler=profiler_version())
    try:
        for s in sizes:
            report = profile_program(source, spec, s, timeout_s=timeout_s, workers=1)
            entry.kernels.append(report.kernels)
    except (ProfileError, ValueError) as exc:
        entry.kernels, entry.error = [], f"profile failed: {exc}"[:300]
        return entry
    entry.ptxas = _ptxas(source, arches)
    return entry


class ProfileStore:
    """Profiles by :func:`cache_key`: the packaged cache, then the user cache, then a run."""

    def __init__(self, packaged: Path | None = PACKAGED, user: Path | None = USER_CACHE,
                 arches: tuple[str, ...] = ARCHES) -> None:
        self.user, self.arches = user, arches
        self.packaged: dict[str, MeasuredProfile] = {}
        if packaged is not None and packaged.exists():
            data = json.loads(packaged.read_text())
            self.packaged = {k: MeasuredProfile.from_json(v)
                             for k, v in data.get("entries", {}).items()}
        #: Where each profile handed out came from: packaged / user / measured.
        self.origin: dict[str, str] = {}

    def _user_path(self, key: str) -> Path | None:
        return None if self.user is None else self.user / f"{key}.json"

    def lookup(self, program: str, spec: TaskSpec) -> MeasuredProfile | None:
        """A cached profile of the program hash ``program`` on ``spec``, or None."""
        key = cache_key(program, spec)
        if key in self.packaged:
            self.origin[key] = "packaged"
            return self.packaged[key]
        path = self._user_path(key)
        if path is not None and path.exists():
            try:
                entry = MeasuredProfile.from_json(json.loads(path.read_text()))
            except (json.JSONDecodeError, TypeError):
                return None  # a torn write: measure again
            self.origin[key] = "user"
            return entry
        return None

    def get(self, source: str, spec: TaskSpec) -> MeasuredProfile:
        """The profile of ``source`` on ``spec``: cached, else measured now and cached."""
        found = self.lookup(content_hash(source), spec)
        if found is not None:
            return found
        entry = measure_profile(source, spec, arches=self.arches)
        key = cache_key(entry.program, spec)
        self.origin[key] = "measured"
        path = self._user_path(key)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(entry.to_json()))
            tmp.replace(path)
        return entry

    def get_many(self, jobs: list[tuple[str, TaskSpec]],
                 threads: int = PROFILE_THREADS) -> list[MeasuredProfile]:
        """:meth:`get` for each (source, spec), misses measured ``threads`` at a time."""
        misses = list({cache_key(content_hash(s), t): (s, t) for s, t in jobs
                       if self.lookup(content_hash(s), t) is None}.values())
        if misses:
            with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
                list(pool.map(lambda job: self.get(*job), misses))
        return [self.get(s, t) for s, t in jobs]

    def stale(self) -> int:
        """Packaged profiles handed out that another profiler version measured."""
        current = profiler_version()
        return sum(1 for k, o in self.origin.items()
                   if o == "packaged" and self.packaged[k].profiler != current)


def extrapolate(entry: MeasuredProfile, spec: TaskSpec, scale: float
                ) -> dict[str, dict[str, float]]:
    """Per-kernel counters at the task's sizes times ``scale`` on the ranged sizes.

    Each counter ``c`` is measured at the large size (``c1``) and the small one (``c0``);
    its exponent ``log(c1 / c0) / log(r)`` (``r``: :func:`size_ratio`) is rounded to the
    nearest integer in ``[0, number of ranged sizes]`` and ``c = c1 * scale ** p``: with every
    ranged size scaled together, a counter of polynomial work grows as an integer power of the
    scale (0: a fixed grid or a tail branch; 1: per element of one size; 3: per GEMM FMA), and
    rounding keeps the tile quantization of tiny sizes (a 16- or 32-wide tile padding 120 to
    128 and 60 to 64) out of an exponent that is then raised over a factor of ~30. A counter
    that is zero at one size keeps ``c1`` (``p = 0``). Maxima and footprints (contention,
    shared bytes) are not scaled. Raises nothing; a failed entry gives ``{}``.
    """
    from structcover.tools.verify.profile import MAXED, rescale_ratios

    if entry.error or len(entry.kernels) != 2:
        return {}
    large, small = entry.kernels
    ratio = size_ratio(spec, entry.sizes[0], entry.sizes[1])
    top = max(1, len(spec.size_ranges))
    out: dict[str, dict[str, float]] = {}
    for name, c1s in large.items():
        c0s = small.get(name, {})
        row: dict[str, float] = {}
        for key, c1 in c1s.items():
            c0 = float(c0s.get(key, 0))
            if key in MAXED or c1 <= 0 or c0 <= 0 or ratio <= 1.0:
                row[key] = float(c1)
                continue
            p = min(max(round(math.log(c1 / c0) / math.log(ratio)), 0), top)
            row[key] = float(c1) * scale ** p
        rescale_ratios(row, c1s)
        out[name] = row
    return out


def work_at(spec: TaskSpec, sizes: dict[str, int]) -> tuple[float, float, float]:
    """(compulsory bytes, useful FLOPs, output elements) of ``spec`` at ``sizes``.

    Compulsory bytes: every buffer read or written once. FLOPs: ``2 * out * inner`` for a
    contraction (sizes in inputs' shapes but no output's, K of a GEMM; every input holding
    such a size also holds an output size, or the output is a scalar: a reduction), else
    ``2 *`` the largest input (elementwise, gather, histogram: one multiply-add per input
    element). The task's work, the same for every program of the task; used for compute
    time only while the profiler does not count operations by class.
    """
    from structcover.tools.simulation.gpu_model import _DTYPE_BYTES

    total, out_elems, in_elems = 0.0, 1.0, 1.0
    outs = [t for t in spec.tensors if t.role != "input"]
    ins = [t for t in spec.tensors if t.role == "input"]
    for t in spec.tensors:
        elems = float(math.prod(eval_size_expr(e, sizes) for e in t.shape))
        total += elems * _DTYPE_BYTES.get(t.dtype, 4)
        if t.role != "input":
            out_elems = max(out_elems, elems)
        else:
            in_elems = max(in_elems, elems)
    out_syms = {str(e) for t in outs for e in t.shape}
    inner_syms = {str(e) for t in ins for e in t.shape if str(e) in sizes} - out_syms
    scalar_out = out_elems <= 1
    contraction = bool(inner_syms) and all(
        scalar_out or any(str(e) in out_syms for e in t.shape)
        for t in ins if inner_syms & {str(e) for e in t.shape})
    inner = float(math.prod(sizes[s] for s in inner_syms)) if contraction else 1.0
    return total, 2.0 * max(out_elems * inner, in_elems), out_elems
