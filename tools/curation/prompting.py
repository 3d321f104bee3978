"""Constrained synthesis prompts: render a target bin as structural constraints, plus the
task, the launcher signature and (on retries) the verifier's structured feedback.

Prompts are files (``prompts/synthesizer_*.md``) filled with ``string.Template``; a missing
variable raises. A gap also exports as an RL training task (verl prompt-parquet layout). Bin
labels are parsed by :mod:`structcover.tools.coverage.labels` (the coverage side owns them).
"""

from __future__ import annotations

import json
import math
import os
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from structcover.schema import TaskSpec, Verdict
from structcover.tools.coverage.bins import Bound


def _is_count(name: str) -> bool:
    try:
        from structcover.tools.features.registry import BY_NAME
    except ImportError:
        return False
    spec = BY_NAME.get(name)
    return spec is not None and spec.kind == "count"


def _describe(name: str) -> str:
    try:
        from structcover.tools.features.registry import describe

        return describe(name)
    except (ImportError, KeyError):
        return name


def _int_range(b: Bound) -> tuple[int | None, int | None]:
    lo = None if b.low is None else math.ceil(b.low)
    hi = None
    if b.high is not None:
        hi = math.floor(b.high)
        if not b.high_closed and hi == b.high:
            hi -= 1
    return lo, hi


def _range_text(b: Bound, count: bool) -> str:
    lo: float | None
    hi: float | None
    if count:
        lo, hi = _int_range(b)
    else:
        lo, hi = b.low, b.high
    fmt = (lambda x: str(x)) if count else (lambda x: f"{x:g}")
    if lo is not None and hi is not None and lo == hi:
        return f"exactly {fmt(lo)}"
    if lo is None or (count and lo <= 0):
        return "none" if count and hi is not None and hi <= 0 else f"at most {fmt(hi)}"
    if hi is None:
        return f"at least {fmt(lo)}"
    upper = "" if count or b.high_closed else " (exclusive)"
    return f"between {fmt(lo)} and {fmt(hi)}{upper}"


def _truthy(b: Bound) -> bool | None:
    if b.value is not None:
        return b.value.strip().lower() in ("1", "true", "yes")
    if b.low is not None and b.low >= 0.5:
        return True
    if b.high is not None and b.high <= 0.5:
        return False
    return None


_FLAGS = {
    "smem.tiled": ("Stage the reused operand in shared-memory tiles: load a tile cooperatively, "
                   "__syncthreads(), compute from shared memory, __syncthreads() before the next "
                   "tile.", "Do not stage data in shared-memory tiles."),
    "smem.padded": ("Pad 2-D shared arrays by one column ([T][T + 1]) against bank conflicts.",
                    "Do not pad shared arrays."),
    "warp.shuffle_reduction": ("Reduce within each warp with __shfl_down_sync/__shfl_xor_sync.",
                               "Do not reduce with warp shuffles."),
    "reduce.shared_tree": ("Combine partial results with a shared-memory tree (halving stride, "
                           "a barrier per step).", "Do not use a shared-memory tree reduction."),
    "reduce.atomic": ("Combine partial results with atomics (atomicAdd).",
                      "Do not use atomics to combine results."),
    "smem.dynamic": ("Use dynamic shared memory (extern __shared__, sized at launch).",
                     "Use only static shared memory."),
    "cg.used": ("Use cooperative groups.", "Do not use cooperative groups."),
    "tc.used": ("Use tensor cores (WMMA or mma).", "Do not use tensor cores."),
}

_COUNTS = {
    "mem.vector_loads": "global accesses through vector types (float4/float2 via reinterpret_cast)",
    "warp.shuffles": "warp shuffles (__shfl_*_sync)",
    "loop.grid_stride": "grid-stride loops (i += blockDim.x * gridDim.x)",
    "loop.unroll_pragmas": "#pragma unroll directives",
    "sync.block_barriers": "__syncthreads() barriers",
    "sync.warp_syncs": "__syncwarp() calls",
    "atomics.global": "atomic operations on global memory",
    "atomics.shared": "atomic operations on shared memory",
    "par.coarsening_loops": "thread-coarsening loops (each thread handles several elements)",
    "kernel.count": "__global__ kernels",
    "launch.count": "kernel launches",
}


def constraint_sentences(bounds: dict[str, Bound]) -> list[str]:
    """One precise sentence per feature of the target bin."""
    out = []
    for name, b in bounds.items():
        count = _is_count(name)
        if name in _FLAGS:
            want = _truthy(b)
            if want is not None:
                out.append(_FLAGS[name][0 if want else 1])
                continue
        if name == "mem.coalesced_fraction" and b.value is None:
            if b.low is not None and b.low >= 0.999:
                out.append("Make every global load and store coalesced: consecutive threadIdx.x "
                           "must touch consecutive elements.")
            else:
                lo, hi = (b.low or 0.0) * 100, (1.0 if b.high is None else b.high) * 100
                out.append(f"Make between {lo:g}% and {hi:g}% of global accesses coalesced "
                           "(unit stride in threadIdx.x); the rest strided.")
            continue
        if "register" in name and b.high is not None:
            out.append(f"Use at most {int(b.high)} registers per thread.")
            continue
        if name == "launch.block_size" and b.value is None:
            out.append(f"Launch blocks of {_range_text(b, True)} threads.")
            continue
        what = _COUNTS.get(name)
        if b.value is not None:
            out.append(f"`{name}` ({_describe(name)}) must be {b.value}.")
        elif what is not None:
            out.append(f"Use {_range_text(b, True)} {what}.")
        else:
            out.append(f"`{name}` ({_describe(name)}) must be {_range_text(b, count)}.")
    return out


#: The first line of a prompt file, ``<!-- prompt: NAME vN -->``: its version, not its text.
_VERSION_LINE = re.compile(r"\A<!--\s*prompt:[^>]*-->[ \t]*\n?")


def load_template(name: str) -> Template:
    """A prompt template shipped in ``structcover.prompts`` (``name`` without ``.md``)."""
    path = resources.files("structcover.prompts") / f"{name}.md"
    try:
        return Template(_VERSION_LINE.sub("", path.read_text(), count=1))
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"prompt template {name!r} not found in structcover.prompts") from exc


def fill(name: str, **values: Any) -> str:
    """Fill template ``name``; every ``$var`` must be given.

    Raises:
        KeyError: A template variable has no value (the message names it and the template).
    """
    try:
        return load_template(name).substitute(**{k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise KeyError(f"prompt {name!r}: missing template variable {exc.args[0]!r}") from exc


def _numbered_constraints(bounds: dict[str, Bound]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(constraint_sentences(bounds), 1))


def _task_vars(task: TaskSpec, bounds: dict[str, Bound]) -> dict[str, str]:
    return {"task_id": task.task_id, "task_description": task.description or task.task_id,
            "signature": task.c_signature() + ";",
            "sizes": ", ".join(f"{k}={v}" for k, v in task.sizes.items()),
            "constraints": _numbered_constraints(bounds)}


def _kernelbench_vars(task: TaskSpec, bounds: dict[str, Bound]) -> dict[str, str]:
    return {"task_id": task.task_id, "problem_source": problem_source(task).strip(),
            "constraints": _numbered_constraints(bounds)}


def problem_source(task: TaskSpec) -> str:
    """The text of a ``kernelbench`` task's problem file (what the model must reproduce).

    Raises:
        ValueError: The task names no problem file, or it cannot be read (the message names it).
    """
    if not task.problem:
        raise ValueError(f"task {task.task_id}: a kernelbench task without a problem file")
    try:
        st = os.stat(task.problem)
        return _read_problem(task.problem, st.st_mtime_ns, st.st_size)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"task {task.task_id}: cannot read its problem file "
                         f"{task.problem}: {exc}") from exc


@lru_cache(maxsize=256)
def _read_problem(path: str, mtime_ns: int, size: int) -> str:
    """A problem file's text, read once per version: an export renders a prompt and a ground
    truth from it for every gap of the task."""
    return Path(path).read_text(encoding="utf-8")


def render_generate(task: TaskSpec, bounds: dict[str, Bound]) -> str:
    """The first-attempt prompt for a target bin: a ``.cu`` file with the task's launcher, or
    for a ``kernelbench`` task a ``ModelNew`` file whose CUDA ``load_inline`` compiles."""
    if task.kind == "kernelbench":
        return fill("synthesizer_kernelbench", **_kernelbench_vars(task, bounds))
    return fill("synthesizer_generate", **_task_vars(task, bounds))


def render_retry_lines(task: TaskSpec, bounds: dict[str, Bound], previous: str,
                       lines: list[str]) -> str:
    """The retry prompt: the first prompt's task and constraints, the failed program and the
    verifier's feedback ``lines`` (one bullet each)."""
    fb = "\n".join(f"- {x}" for x in lines or ["(no feedback recorded)"])
    if task.kind == "kernelbench":
        return fill("synthesizer_kernelbench_retry", **_kernelbench_vars(task, bounds),
                    previous_program=previous.strip(), feedback=fb)
    return fill("synthesizer_retry", **_task_vars(task, bounds), previous_program=previous,
                feedback=fb)


def feedback_lines(verdict: Verdict | None, structure_misses: list[str] | None = None) -> list[str]:
    """The verifier's structured feedback as short lines: compile errors with their lines,
    the mismatch location and size, anti-hacking flags, features that missed the bin."""
    out: list[str] = []
    if verdict is not None:
        if verdict.compiled is False:
            errs = [ln.strip() for ln in verdict.compile_log.splitlines() if "error" in ln.lower()]
            out += [f"compile error: {e}" for e in errs[:10]] or ["compile failed (no error lines)"]
        if verdict.equivalent is False:
            where = f" at index {verdict.first_mismatch}" if verdict.first_mismatch else ""
            err = (f", max abs error {verdict.max_abs_error:g}"
                   if verdict.max_abs_error is not None else "")
            out.append(f"wrong result ({verdict.failure or 'mismatch'}){where}{err}"
                       + (f": {verdict.detail}" if verdict.detail else ""))
        out += [f"rejected by anti-hacking check: {f}" for f in verdict.hacking_flags]
    out += [f"structure missed the bin: {m}" for m in structure_misses or []]
    return out


def render_retry(task: TaskSpec, bounds: dict[str, Bound], previous: str,
                 verdict: Verdict | None, structure_misses: list[str] | None = None) -> str:
    """The retry prompt: the first prompt's content plus the failed program and feedback."""
    return render_retry_lines(task, bounds, previous, feedback_lines(verdict, structure_misses))


def _generic_prompt(task_id: str, bounds: dict[str, Bound]) -> str:
    """The prompt for a task the corpus does not know (no spec: no signature to demand)."""
    return (f"Write a CUDA program for task `{task_id}`.\n"
            "Its structure must satisfy:\n"
            + "\n".join(f"- {b.render()}" for b in bounds.values())
            + "\nReturn the complete .cu source in one code block.")


def gap_to_rl_row(task: TaskSpec | str, label: str, bounds: dict[str, Bound], *, index: int = 0,
                  split: str = "train", data_source: str = "structcover",
                  extra: dict[str, Any] | None = None, look_up: bool = True) -> dict[str, Any]:
    """One RL training task for a gap, in the verl prompt-parquet layout.

    The one builder of gap rows (``structcover prompt`` and ``curate`` both use it). The
    reward function gets ``ground_truth`` = JSON with ``task_id``, ``task_spec`` (None for a
    task the corpus does not know), ``target_bin`` and ``constraints`` (the bin's bounds); for a
    ``kernelbench`` task also ``problem_source``, the problem file's text (the spec's path is
    this machine's, not the trainer's), so its scorer can check the answer.

    Args:
        task: The task's spec, or its id (looked up in the corpus; unknown ids get a generic
            prompt without a launcher signature).
        label: The target bin's label.
        bounds: The bin's per-feature bounds.
        index: Row index for ``extra_info``.
        split: Dataset split for ``extra_info``.
        data_source: verl's data source name.
        extra: More ``extra_info`` fields (e.g. the gap's kind and priority).
        look_up: False: a ``task`` given as an id is not looked up in the corpus (the caller
            did, once per task, and the corpus does not have it: each lookup checks the
            corpus folder for changes, 6 ms, and an export writes hundreds of rows).
    """
    spec = task if isinstance(task, TaskSpec) else corpus_spec(task) if look_up else None
    task_id = spec.task_id if spec is not None else str(task)
    content = render_generate(spec, bounds) if spec is not None else _generic_prompt(task_id,
                                                                                      bounds)
    truth = {"task_id": task_id, "task_spec": spec.model_dump(mode="json") if spec else None,
             "target_bin": label,
             "constraints": {k: v.model_dump(mode="json") for k, v in bounds.items()}}
    if spec is not None and spec.kind == "kernelbench":
        truth["problem_source"] = problem_source(spec)
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": content}],
        "ability": "cuda-kernel",
        "reward_model": {"style": "rule", "ground_truth": json.dumps(truth)},
        "extra_info": {"index": index, "split": split, "task_id": task_id, "target_bin": label,
                       **(extra or {})},
    }


def corpus_spec(task_id: str) -> TaskSpec | None:
    """The corpus TaskSpec of ``task_id``, or None when the corpus does not have it."""
    from structcover.tools.data.corpus import find_task

    try:
        return find_task(task_id)[0]
    except (KeyError, ValueError):  # not a corpus task: the generic prompt
        return None


def export_rl_tasks(rows: list[dict[str, Any]], path: Path) -> Path:
    """Write RL task rows as ``.parquet`` or ``.jsonl`` (by the file suffix).

    Raises:
        ValueError: The suffix is neither.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif path.suffix == ".parquet":
        import pandas as pd

        pd.DataFrame(rows).to_parquet(path, index=False)
    else:
        raise ValueError(f"{path}: expected a .parquet or .jsonl file")
    return path
