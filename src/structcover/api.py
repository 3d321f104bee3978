"""The Python API a training loop calls between rounds (no printing; typed results).

::

    from structcover.api import between_rounds, load_archive, bin_of

    result = between_rounds("rollouts/round_0007.parquet", "runs/kernels", budget=400)
    next_round_data = result.curated_dir          # runs/kernels/curated/round_8/
    archive = load_archive("runs/kernels")
    print(bin_of(my_kernel_source, archive))      # e.g. "pattern.reuse=smem_tiling,…"

``between_rounds`` is the same step the watcher runs: idempotent (a round already processed
with the same rollouts returns its recorded result without re-running) and resumable (a round
cut off mid-campaign resumes from its checkpoints).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from structcover.tools.coverage.archive import Archive
from structcover.tools.coverage.archive import load_archive as _load_archive

__all__ = ["RoundResult", "between_rounds", "bin_of", "load_archive"]

_ROUND_IN_NAME = re.compile(r"round_(\d+)")


class RoundResult(BaseModel):
    """What :func:`between_rounds` did for one round.

    Attributes:
        round: The round whose rollouts were read.
        curated_dir: Where the next round's curated data is.
        ran: False when the round had already been processed (nothing was re-run).
        campaign: The campaign's summary (None when nothing was re-run).
    """

    round: int
    curated_dir: Path
    ran: bool
    campaign: Any = Field(None, description="structcover.campaign.CampaignResult")


def _round_number(rollouts: Path | str | pd.DataFrame | list[dict[str, Any]],
                  round: int | None) -> int:
    if round is not None:
        if round < 0:
            raise ValueError(f"round must be >= 0, got {round}")
        return round
    if isinstance(rollouts, str | Path):
        match = _ROUND_IN_NAME.search(Path(rollouts).name)
        if match:
            return int(match.group(1))
    raise ValueError("between_rounds: pass round=N (the rollouts' name has no round_<N>)")


def between_rounds(rollouts: Path | str | pd.DataFrame | list[dict[str, Any]],
                   state_dir: Path | str, *, round: int | None = None,
                   **options: Any) -> RoundResult:
    """Run one round's campaign and write ``<state_dir>/curated/round_<N+1>/``.

    Args:
        rollouts: The round's rollouts: a file or folder any reader of the tool accepts, or
            the rows themselves (a DataFrame or a list of dicts with ``task_id``, ``program``
            and the reward columns).
        state_dir: The campaign state shared by all rounds.
        round: The round number; read from a ``round_<N>`` name when omitted.
        **options: :class:`structcover.campaign.CampaignOptions` fields (``budget``,
            ``backend``, ``seed``, ``target_scov`` …).

    Returns:
        Where the curated data is and what the campaign did.

    Raises:
        ValueError: Bad rollouts or options (the message names which and why).
    """
    from structcover.watcher import RoundInput, process_round, state_lock

    number = _round_number(rollouts, round)
    state = Path(state_dir)
    state.mkdir(parents=True, exist_ok=True)
    if isinstance(rollouts, pd.DataFrame | list):
        frame = rollouts if isinstance(rollouts, pd.DataFrame) else pd.DataFrame(rollouts)
        if frame.empty:
            raise ValueError(f"between_rounds: round {number} has no rollouts")
        path = state / "api" / "inputs" / f"round_{number}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(path)
    else:
        path = Path(rollouts)
        if not path.exists():
            raise ValueError(f"{path}: no such rollouts file or folder")
    captured: list[Any] = []

    def run(data: Path, state_dir: Path, opts: Any) -> Any:
        from structcover.campaign import run_campaign

        result = run_campaign(data, state_dir, opts)
        captured.append(result)
        return result

    with state_lock(state, wait=True):
        out = process_round(RoundInput(number=number, path=path, complete=True), state,
                            options=options, runner=run)
    curated = out or state / "curated" / f"round_{number + 1}"
    return RoundResult(round=number, curated_dir=curated, ran=out is not None,
                       campaign=captured[0] if captured else None)


def load_archive(state_dir: Path | str) -> Archive:
    """The frozen coverage archive of a campaign state.

    Raises:
        ValueError: The state has no archive yet (no round was diagnosed).
    """
    archive = _load_archive(Path(state_dir))
    if archive is None:
        raise ValueError(f"{state_dir}: no archive yet; run a campaign or diagnose a round first")
    return archive


def bin_of(program: str, archive: Archive) -> str | None:
    """The archive bin a program's structure falls in, or None when it cannot be binned.

    Args:
        program: CUDA source (or a KernelBench-style Python file with embedded CUDA).
        archive: From :func:`load_archive`.
    """
    from structcover.tools.features.extract import extract_values

    values = extract_values(program)
    row = pd.DataFrame([{f: values.get(f) for f in archive.features}])
    index = int(archive.index(row)[0])
    return None if index < 0 else archive.label(index)
