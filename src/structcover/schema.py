"""Domain models shared by every part of STRUCT-COVER (docs/ARCHITECTURE.md).

These are plain pydantic models: tools take and return them, the CLI prints them as JSON,
and the agents read their docstrings. Feature values are raw measures; only the archive bins.
"""

from __future__ import annotations

import hashlib
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from structcover.arith import ExprError, eval_int_expr

#: Element types a task's buffers may have, with their numpy names.
DTYPES: dict[str, str] = {
    "float32": "float32",
    "float64": "float64",
    "float16": "float16",
    "bfloat16": "uint16",  # numpy has no bfloat16; the raw bits travel as uint16
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
}

#: Default equivalence tolerances per dtype, ``(atol, rtol)``: ``|c - r| <= atol + rtol*|r|``.
#: Tight enough that a reduction skipping 1 element in 128 (a 0.78% error) fails for float32,
#: float64 and float16 (whose rtol is about 5-10 ulps); bfloat16 keeps one ulp (2^-7 = 0.78% at
#: the bottom of a binade), so at its precision only a skip of 1 in 64 or more is visible.
#: Tasks override these (``TaskSpec.atol``/``rtol``) where summation order legitimately differs.
DEFAULT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "float64": (1e-8, 1e-8),
    "float16": (1e-3, 5e-3),
    "bfloat16": (1e-2, 8e-3),
}

def content_hash(source: str) -> str:
    """Return the stable id of a program: sha256 of its UTF-8 text, first 16 hex digits."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def eval_size_expr(expr: str | int | float, sizes: dict[str, int]) -> int:
    """Evaluate a size expression such as ``"M*K"`` or ``"N+1"`` over a task's sizes.

    Args:
        expr: An integer or an arithmetic expression over size names.
        sizes: The task's named sizes.

    Returns:
        The integer value.

    Raises:
        ValueError: The expression is not integer arithmetic over the size names, or exceeds
            the limits of :mod:`structcover.arith` (the message names the expression).
    """
    try:
        return eval_int_expr(expr, sizes)
    except ExprError as exc:
        raise ValueError(f"size expression {expr!r}: {exc}") from exc


class RewardSource(str, Enum):
    """Where a reward came from. A reward is never invented: it is given, measured or simulated."""

    GIVEN = "given"
    MEASURED_GPU = "measured-gpu"
    SIMULATED = "simulated"


class Reward(BaseModel):
    """The outcome signal of a program: correctness, speedup over the reference, time, energy."""

    correct: bool | None = None
    speedup: float | None = Field(default=None, description="reference time / program time")
    runtime_ms: float | None = None
    energy_j: float | None = None
    source: RewardSource = RewardSource.GIVEN

    @field_validator("speedup", "runtime_ms", "energy_j")
    @classmethod
    def _non_negative(cls, value: float | None) -> float | None:
        if value is not None and value < 0:
            raise ValueError("must be >= 0")
        return value


class Trajectory(BaseModel):
    """One rollout: a prompt x, the program y the policy wrote, its reward r, the round."""

    task_id: str
    prompt: str = ""
    program: str
    reward: Reward = Field(default_factory=Reward)
    round: int = 0
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def program_id(self) -> str:
        """Content-hash id of the program text."""
        return content_hash(self.program)


class Origin(BaseModel):
    """How a program came to exist."""

    kind: Literal["rollout", "corpus", "synthesized", "mutated"] = "rollout"
    parent_id: str | None = None
    operator: str | None = None
    detail: str | None = None


class Program(BaseModel):
    """A program under study, identified by the hash of its source."""

    source: str
    language: Literal["cuda", "triton", "python", "cute", "unknown"] = "cuda"
    task_id: str | None = None
    origin: Origin = Field(default_factory=Origin)
    round: int = 0

    @property
    def id(self) -> str:
        """Content-hash id of the source."""
        return content_hash(self.source)


FeatureValue = float | int | bool | str | None


class FeatureVector(BaseModel):
    """Raw structural measures of one program: names to floats, counts, flags or categories."""

    program_id: str
    values: dict[str, FeatureValue] = Field(default_factory=dict)


class TensorArg(BaseModel):
    """A buffer the launcher receives as a pointer: shape expressions over the task's sizes."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: Literal["tensor"] = "tensor"
    dtype: str = "float32"
    shape: list[str | int]
    role: Literal["input", "output", "inout"] = "input"
    #: How inputs are drawn: uniform in [low, high), normal(0, high), randint in [low, high),
    #: zeros, ones, or "structured" when the task's generator fills it.
    distribution: Literal["uniform", "normal", "randint", "zeros", "ones", "structured"] = "uniform"
    low: float = -1.0
    high: float = 1.0

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        if value not in DTYPES:
            raise ValueError(f"unknown dtype {value!r}; known: {sorted(DTYPES)}")
        return value


class ScalarArg(BaseModel):
    """A by-value launcher argument: an integer size expression or a float constant."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: Literal["scalar"] = "scalar"
    ctype: Literal["int", "long long", "unsigned int", "float", "double"] = "int"
    value: str | int | float


class Accumulation(BaseModel):
    """An output that is a long sum of an input: its fp error grows with the sum's length.

    The verifier then allows, per output element ``i``, ``c * u * g(n_i) * A_i`` on top of
    ``atol + rtol * |r_i|``: ``u`` the output dtype's unit roundoff, ``n_i`` the terms summed
    into element ``i`` (``i + 1`` along the last axis for a scan, the terms per output for a
    reduction), ``A_i`` the sum of their magnitudes, ``g(n) = sqrt(n)`` for ``order: serial``
    (any order, the probabilistic bound of recursive summation) or ``log2(n) + 1`` for
    ``order: tree``. See docs/EMULATOR.md, "Tolerances that grow with accumulation depth".
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["scan", "reduction"]
    #: The input tensor whose elements are summed.
    over: str
    #: Outputs the rule applies to (empty: every floating-point output).
    outputs: list[str] = Field(default_factory=list)
    #: The least accurate summation order an honest program may use.
    order: Literal["serial", "tree"] = "serial"
    #: The safety factor ``c`` of the bound.
    c: float = Field(default=4.0, gt=0, le=64)


class TaskSpec(BaseModel):
    """How to execute every program of one task the same way on every backend.

    A program exposes ``extern "C" int <launcher>(<args in order>, cudaStream_t stream)``: it
    receives device pointers (host memory on the CPU backend), the sizes and a stream, launches
    its kernels with whatever grid and block it chooses, and returns a CUDA error code
    (0 = success).
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    family: str = ""
    description: str = ""
    launcher: str = "launch"
    args: list[TensorArg | ScalarArg]
    sizes: dict[str, int]
    #: Named structured-input generator (e.g. "csr") filling args whose distribution is
    #: "structured"; see tools/verify/inputs.py.
    generator: str | None = None
    generator_params: dict[str, Any] = Field(default_factory=dict)
    #: Inclusive ``[low, high]`` ranges the verifier draws each listed size from (every
    #: verification tries the low end, the high end and odd sizes between); sizes not listed
    #: keep their value from ``sizes``. See tools/verify/trials.py ``size_plan``.
    size_ranges: dict[str, tuple[int, int]] = Field(default_factory=dict)
    #: Input profiles verification cycles through (tools/verify/inputs.py ``PROFILES``):
    #: ``nominal`` (each argument's own distribution), ``large`` (float bounds times
    #: ``large_scale``), ``ties`` (few distinct values), ``edges`` (only the bounds and the
    #: midpoint), ``special`` (nominal plus signed zeros, infinities and NaNs), ``sparse``
    #: (1 in 256 elements drawn, the rest zero).
    input_profiles: list[Literal["nominal", "large", "ties", "edges", "special", "sparse"]] = [
        "nominal"]  # pydantic copies a mutable default per instance
    large_scale: float = 1000.0
    atol: float | None = None
    rtol: float | None = None
    #: Outputs that are long sums of an input, with error allowed to grow with the sum's
    #: length (tools/verify/accumulation.py); None: the flat atol/rtol only.
    accumulation: Accumulation | None = None
    reference: str | None = Field(default=None, description="path or corpus name of the reference")
    #: ``launch``: a program exposing the ``extern "C"`` launcher above. ``kernelbench``: a Python
    #: file defining ``ModelNew``, checked against the ``Model`` of the problem file ``problem``
    #: (tools/kernelbench; ``args`` is empty and ``sizes`` are the problem's constants).
    kind: Literal["launch", "kernelbench"] = "launch"
    problem: str | None = Field(default=None, description="kernelbench: the problem file")

    @model_validator(mode="after")
    def _check(self) -> TaskSpec:
        names = [a.name for a in self.args]
        if len(set(names)) != len(names):
            raise ValueError(f"task {self.task_id}: duplicate argument names in {names}")
        if self.kind == "kernelbench":
            if not self.problem:
                raise ValueError(f"task {self.task_id}: a kernelbench task names its problem file")
        elif not any(isinstance(a, TensorArg) and a.role != "input" for a in self.args):
            raise ValueError(f"task {self.task_id}: no output argument")
        for arg in self.args:
            exprs = arg.shape if isinstance(arg, TensorArg) else (
                [arg.value] if arg.ctype not in ("float", "double") else [])
            for expr in exprs:
                eval_size_expr(expr, self.sizes)
            structured = isinstance(arg, TensorArg) and arg.distribution == "structured"
            if structured and not self.generator:
                raise ValueError(f"task {self.task_id}: {arg.name} is structured but no generator")
        for name, (low, high) in self.size_ranges.items():
            if name not in self.sizes:
                raise ValueError(f"task {self.task_id}: size_ranges names {name!r}, which is not "
                                 f"a size (sizes: {sorted(self.sizes)})")
            if not 1 <= low <= high:
                raise ValueError(f"task {self.task_id}: size_ranges[{name!r}] = [{low}, {high}] "
                                 "must satisfy 1 <= low <= high")
        if not self.input_profiles:
            raise ValueError(f"task {self.task_id}: input_profiles must name at least one profile")
        if self.large_scale <= 0:
            raise ValueError(f"task {self.task_id}: large_scale must be > 0, "
                             f"got {self.large_scale}")
        if self.accumulation is not None:
            roles = {a.name: a.role for a in self.tensors}
            acc = self.accumulation
            if roles.get(acc.over) != "input":
                raise ValueError(f"task {self.task_id}: accumulation.over {acc.over!r} is not an "
                                 f"input tensor (inputs: {sorted(n for n, r in roles.items() if r == 'input')})")
            for out in acc.outputs:
                if roles.get(out) in (None, "input"):
                    raise ValueError(f"task {self.task_id}: accumulation.outputs names {out!r}, "
                                     "which is not an output tensor")
        return self

    @property
    def tensors(self) -> list[TensorArg]:
        """The pointer arguments, in launcher order."""
        return [a for a in self.args if isinstance(a, TensorArg)]

    def shape_of(self, name: str, sizes: dict[str, int] | None = None) -> tuple[int, ...]:
        """Concrete shape of tensor ``name`` for ``sizes`` (the task's own by default)."""
        arg = next(a for a in self.tensors if a.name == name)
        return tuple(eval_size_expr(e, sizes or self.sizes) for e in arg.shape)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        """(atol, rtol) for outputs of ``dtype``: the task's override, else the dtype default."""
        atol, rtol = DEFAULT_TOLERANCE.get(dtype, (0.0, 0.0))
        return (self.atol if self.atol is not None else atol,
                self.rtol if self.rtol is not None else rtol)

    def c_signature(self) -> str:
        """The launcher's C prototype, as programs must declare it."""
        ctypes_ = {"float32": "float", "float64": "double", "float16": "__half",
                   "bfloat16": "__nv_bfloat16", "int8": "signed char", "uint8": "unsigned char",
                   "int32": "int", "uint32": "unsigned int", "int64": "long long"}
        parts = []
        for arg in self.args:
            if isinstance(arg, TensorArg):
                const = "const " if arg.role == "input" else ""
                parts.append(f"{const}{ctypes_[arg.dtype]}* {arg.name}")
            else:
                parts.append(f"{arg.ctype} {arg.name}")
        parts.append("cudaStream_t stream")
        return f'extern "C" int {self.launcher}({", ".join(parts)})'


class CompileStats(BaseModel):
    """What ptxas reported for one kernel."""

    kernel: str
    registers: int = 0
    smem_bytes: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    barriers: int = 0


class Timing(BaseModel):
    """Measured run time over several trials."""

    median_ms: float
    mean_ms: float
    std_ms: float
    trials: int
    cv: float = Field(description="coefficient of variation, std / mean")


class Verdict(BaseModel):
    """Everything the verifier learned about one candidate program."""

    program_id: str
    task_id: str | None = None
    compiled: bool | None = None
    compile_log: str = ""
    compile_stats: list[CompileStats] = Field(default_factory=list)
    equivalent: bool | None = Field(default=None, description="None = not run")
    backend: Literal["gpu", "cpu", "compile-only", "none"] = "none"
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    first_mismatch: list[int] | None = None
    structure_match: bool | None = None
    hacking_flags: list[str] = Field(default_factory=list)
    seed: int | None = Field(default=None, description="first trial seed; pass it as --seed "
                             "to replay the same sizes and inputs")
    failure: str | None = Field(default=None, description="short machine-readable failure kind")
    detail: str = ""
    timing: Timing | None = None
    energy_j: float | None = None
    #: Reference time / candidate time, where the backend timed both (KernelBench GPU path).
    speedup: float | None = None
    #: What the verdict's reader must know about how it was reached (e.g. shrunk sizes).
    notes: list[str] = Field(default_factory=list)
    #: Every planned trial, in order: ``{"seed", "sizes", "profile"}`` (``seed`` above replays
    #: the whole plan; this is what it expands to).
    trial_plan: list[dict[str, Any]] = Field(default_factory=list)
    #: Index in ``trial_plan`` of the trial that decided a failure (None: none failed).
    failed_trial: int | None = None
    #: The emulator's fiber schedules each run went through (``forward``, ``reverse``,
    #: ``random:SEED``), as the backend ran them; empty where the backend has none.
    schedules: list[str] = Field(default_factory=list)
    #: The tolerance rule applied to accumulated outputs (empty: flat atol/rtol); on the
    #: KernelBench CPU path, the precision rule (tools/kernelbench/precision.py).
    tolerance_rule: str = ""
    #: KernelBench precision check: the largest ``||c - r64|| / scale`` over the outputs (the
    #: candidate's error in units of the reference's own rounding error; the limit is in
    #: ``tolerance_rule``). None where no precision check ran.
    precision_ratio: float | None = None
    #: Emulator profile counters (``verify --profile``; tools/verify/profile.py): per launch,
    #: per kernel, total, normalized per output element. None when not profiled.
    profile: dict[str, Any] | None = None


class RoundInfo(BaseModel):
    """Bookkeeping for one training round seen by the tool."""

    round: int
    source: str = ""
    n_trajectories: int = 0
    n_quarantined: int = 0
    created_at: str = ""
