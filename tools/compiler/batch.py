"""Compiler features of many programs, as batches of compiles on an executor.

The batch entry point of ``structcover features --compiler``: each program is compiled
(through the on-disk compile cache) and reduced to :data:`~structcover.tools.compiler.
features.FEATURE_NAMES`-style values by :func:`compiler_feature_values`. With an executor
(``tools.executors``: a local process pool or Ray) the compiles run as its tasks, a batch of
programs per task; without one they run here, one after another. The rows are the same either
way: a compile depends only on the source, the options and the compiler version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structcover.config import CompilerSettings

Row = dict[str, float | str]


@dataclass(frozen=True)
class CompileOptions:
    """What every compile of a batch shares (sent once per worker, not once per program)."""

    arch: str
    block_size: int | None = None
    include_dirs: tuple[Path, ...] | None = None
    settings: CompilerSettings | None = None


def _row(options: CompileOptions, source: str) -> Row:
    """One program's compiler features; a failure of the service is the row's error."""
    from structcover.tools.compiler.features import compiler_feature_values

    try:
        return dict(compiler_feature_values(
            source, arch=options.arch, block_size=options.block_size, settings=options.settings,
            include_dirs=list(options.include_dirs) if options.include_dirs is not None
            else None))
    except Exception as exc:  # noqa: BLE001 - one program's failure is its row, not the job's
        return {"compile.error": f"{type(exc).__name__}: {exc}"[:300]}


def compiler_feature_rows(sources: Sequence[str], *, arch: str, block_size: int | None = None,
                          include_dirs: Sequence[Path] | None = None,
                          settings: CompilerSettings | None = None, executor: Any = None,
                          batch_size: int = 4,
                          on_progress: Callable[[int], None] | None = None) -> list[Row]:
    """Compiler feature values of each program, in input order.

    Args:
        sources: Program texts.
        arch: Target architecture (``sm_90`` ...).
        block_size: Threads per block for occupancy (None: each kernel's launch).
        include_dirs: The programs' own header folders (None: the settings').
        settings: Compiler settings (via, timeout, cache folder); the driver's travel with the
            tasks, a worker never reads its own.
        executor: A ``tools.executors`` executor; None compiles here, serially.
        batch_size: Programs per executor task.
        on_progress: Called with the number of programs done.

    Returns:
        One dict per program; a program whose compile crashed the service has only
        ``compile.error``, one whose worker died on every try ``compile.error`` naming the
        quarantine.
    """
    options = CompileOptions(arch, block_size,
                             tuple(include_dirs) if include_dirs is not None else None,
                             settings)
    if executor is None:
        rows: list[Row] = []
        for source in sources:
            rows.append(_row(options, source))
            if on_progress is not None:
                on_progress(len(rows))
        return rows
    from structcover.tools.executors import Quarantined

    out: list[Row] = []
    for result in executor.map(_row, sources, batch_size=batch_size, shared=options,
                               on_progress=on_progress):
        out.append({"compile.error": f"quarantined: {result.reason}"[:300]}
                   if isinstance(result, Quarantined) else result)
    return out
