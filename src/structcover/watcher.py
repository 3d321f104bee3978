"""Between training rounds, unattended: notice a round's rollouts, run the campaign, write N+1.

A trainer drops each round's rollouts into a folder, as one file or one folder per round::

    rollouts/round_0007.parquet    (or .jsonl, or a folder round_0007/ of .jsonl/.parquet shards)
    rollouts/round_0007.done       the marker, written LAST, when the round is complete

A round counts as complete when its marker exists (``round_<N>.done`` beside it, or ``DONE`` /
``_SUCCESS`` inside a round folder). With ``complete_when="present"`` the round's final name
appearing is the signal instead: the trainer writes ``round_<N>.parquet.tmp`` and renames it,
which is atomic on one file system, so a half-written file is never seen under its final name.

For each complete round the watcher runs :func:`structcover.campaign.run_campaign` with the
round's data and writes ``<state>/curated/round_<N+1>/`` (built in a hidden folder and renamed
into place, so a reader never sees half of it). It is idempotent and restartable:

* ``<state>/watch/ledger.json`` records each processed round with the content hash of its
  rollouts: a processed round is skipped, so re-running changes nothing;
* a round that was started but not finished (the machine restarted) is resumed from the
  campaign's checkpoints;
* ``<state>/watch/lock`` is held (``flock``) while a watcher works, so two watchers on one state
  never process the same round; the second says so and waits (or, with ``--once``, exits).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, Field

from structcover.tools.data.atomic import atomic_write, write_text
from structcover.tools.verify.jail import SandboxUnavailable

__all__ = ["RoundInput", "WatchOutcome", "WatcherBusy", "find_rounds", "process_round",
           "watch", "watch_once"]

log = logging.getLogger("structcover.watch")

CompleteWhen = Literal["marker", "present"]
_ROUND = re.compile(r"^round_(\d+)(\.jsonl|\.parquet|\.pq|\.ndjson)?$")
_TMP_SUFFIXES = (".tmp", ".partial", ".part", ".inprogress")
_FOLDER_MARKERS = ("DONE", "_SUCCESS", ".done")


class WatcherBusy(RuntimeError):
    """Another watcher holds the state's lock."""


class RoundInput(BaseModel):
    """One round's rollouts as found in the watched folder."""

    number: int
    path: Path
    complete: bool
    reason: str = Field("", description="why it is not complete yet")


class WatchOutcome(BaseModel):
    """What one pass over the folder did."""

    processed: list[int] = Field(default_factory=list)
    skipped: list[int] = Field(default_factory=list, description="already processed")
    waiting: list[int] = Field(default_factory=list, description="not complete yet")
    failed: dict[int, str] = Field(default_factory=dict)


def _marker_of(path: Path) -> Path:
    stem = path.name.split(".")[0]
    return path.with_name(f"{stem}.done")


def find_rounds(folder: Path, *, complete_when: CompleteWhen = "marker") -> list[RoundInput]:
    """The rounds in ``folder``, in round order, each with whether it is complete.

    Raises:
        ValueError: ``folder`` is missing, or one round number appears under two names.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a folder of rollouts")
    found: dict[int, RoundInput] = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name.endswith(_TMP_SUFFIXES):
            continue
        match = _ROUND.match(entry.name)
        if not match or entry.is_dir() == bool(match.group(2)):
            continue  # folders carry no suffix, files always do
        number = int(match.group(1))
        if number in found:
            raise ValueError(f"{folder}: round {number} appears twice ({found[number].path.name}, "
                             f"{entry.name})")
        if complete_when == "present":
            complete, reason = True, ""
        elif entry.is_dir():
            marker = _marker_of(entry)
            complete = any((entry / m).exists() for m in _FOLDER_MARKERS) or marker.exists()
            reason = "" if complete else f"no marker yet ({entry.name}/DONE or {marker.name})"
        else:
            complete = _marker_of(entry).exists()
            reason = "" if complete else f"no marker yet ({_marker_of(entry).name})"
        found[number] = RoundInput(number=number, path=entry, complete=complete, reason=reason)
    return [found[n] for n in sorted(found)]


def content_hash(path: Path) -> str:
    """SHA-256 over a file's bytes, or over a folder's relative paths and bytes (sorted)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if path.is_dir():
            if file.name in _FOLDER_MARKERS:
                continue
            digest.update(str(file.relative_to(path)).encode() + b"\0")
        with file.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _campaign_input(round_in: RoundInput, work: Path) -> Path:
    """A file the campaign can read: the round's file, or its shards joined in name order.

    Raises:
        ValueError: A round folder with no shards, or with both JSONL and Parquet shards.
    """
    if round_in.path.is_file():
        return round_in.path
    shards = sorted(p for p in round_in.path.rglob("*")
                    if p.is_file() and p.suffix in (".jsonl", ".ndjson", ".parquet", ".pq"))
    kinds = {"jsonl" if p.suffix in (".jsonl", ".ndjson") else "parquet" for p in shards}
    if not shards:
        return round_in.path  # a folder of .cu/.py sources or a saved dataset: read as it is
    if len(kinds) > 1:
        raise ValueError(f"{round_in.path}: mixes JSONL and Parquet shards; use one format")
    work.mkdir(parents=True, exist_ok=True)
    if kinds == {"jsonl"}:
        joined = work / f"round_{round_in.number}.jsonl"
        text = "".join(p.read_text(encoding="utf-8").rstrip("\n") + "\n" for p in shards)
        write_text(text, joined)
        return joined
    joined = work / f"round_{round_in.number}.parquet"
    frame = pd.concat([pd.read_parquet(p) for p in shards], ignore_index=True)
    atomic_write(joined, lambda tmp: frame.to_parquet(tmp, index=False))
    return joined


class _Ledger:
    """``<state>/watch/ledger.json``: round → input hash, status, output folder."""

    def __init__(self, state: Path) -> None:
        self.path = state / "watch" / "ledger.json"
        try:
            self.rounds: dict[str, dict[str, Any]] = (json.loads(self.path.read_text())
                                                      if self.path.exists() else {})
        except (OSError, ValueError) as exc:
            raise ValueError(f"{self.path}: unreadable watcher ledger ({exc}); move it aside "
                             f"to start over") from exc

    def get(self, number: int) -> dict[str, Any] | None:
        return self.rounds.get(str(number))

    def put(self, number: int, entry: dict[str, Any]) -> None:
        self.rounds[str(number)] = entry
        write_text(json.dumps(self.rounds, indent=2, sort_keys=True) + "\n", self.path)


@contextlib.contextmanager
def state_lock(state: Path, *, wait: bool) -> Iterator[None]:
    """Hold ``<state>/watch/lock`` for the duration (the kernel frees it if we die).

    Raises:
        WatcherBusy: Another watcher holds it and ``wait`` is False.
    """
    lock_path = state / "watch" / "lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError as exc:
            raise WatcherBusy(f"{lock_path}: another watcher is working on this state") from exc
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


Runner = Callable[..., Any]


def _default_runner() -> Runner:
    from structcover.campaign import run_campaign

    return run_campaign


def process_round(round_in: RoundInput, state: Path, *, options: dict[str, Any] | None = None,
                  runner: Runner | None = None) -> Path | None:
    """Run the campaign on one complete round and write ``curated/round_<N+1>/``.

    Must be called with the state lock held. Returns the output folder, or None when the round
    was already processed with the same rollouts.

    Raises:
        ValueError: The round changed after it was processed, or the campaign rejected it.
    """
    from structcover.campaign import CampaignOptions

    state = Path(state)
    ledger = _Ledger(state)
    digest = content_hash(round_in.path)
    out = state / "curated" / f"round_{round_in.number + 1}"
    entry = ledger.get(round_in.number)
    if entry and entry.get("status") == "done" and out.exists():
        if entry.get("input_sha256") != digest:
            raise ValueError(f"{round_in.path}: round {round_in.number} changed after it was "
                             f"processed; remove its entry from {ledger.path} to redo it")
        return None
    resume = bool(entry and entry.get("status") == "running"
                  and entry.get("input_sha256") == digest)
    log.info("round %d: %s campaign on %s", round_in.number, "resuming" if resume else "starting",
             round_in.path.name)
    ledger.put(round_in.number, {"status": "running", "input_sha256": digest})
    partial = state / "curated" / f".round_{round_in.number + 1}.partial"
    if partial.exists() and not resume:
        shutil.rmtree(partial)
    partial.mkdir(parents=True, exist_ok=True)
    data = _campaign_input(round_in, state / "watch" / "inputs")
    opts = CampaignOptions(**{**(options or {}), "round": round_in.number, "resume": resume,
                              "output_dir": partial})
    result = (runner or _default_runner())(data, state, opts)
    if out.exists():
        shutil.rmtree(out)
    partial.replace(out)
    added = len(getattr(result, "added", []) or [])
    ledger.put(round_in.number, {"status": "done", "input_sha256": digest,
                                 "output": str(out.relative_to(state)), "added": added})
    log.info("round %d: wrote %s (%d programs added)", round_in.number, out, added)
    _prune_build_cache()
    return out


def _prune_build_cache() -> None:
    """After a round: the emulator's per-program builds back under ``verify.cache_max_gb``
    (each verified candidate leaves a library; a round of thousands would fill the disk)."""
    from structcover.tools.verify.cache_prune import prune_after_run

    line, failure = prune_after_run()
    if failure:  # the round's outputs are written; a full prune waits for the next
        log.warning("%s", failure)
    if line:
        log.info("%s", line)


def watch_once(folder: Path, state: Path, *, complete_when: CompleteWhen = "marker",
               options: dict[str, Any] | None = None, runner: Runner | None = None,
               wait_for_lock: bool = False) -> WatchOutcome:
    """One pass: process every complete, unprocessed round, in order.

    A round whose campaign fails is logged and recorded in the outcome; later rounds wait for
    it (round N+1's campaign builds on what round N filled).

    Raises:
        WatcherBusy: Another watcher holds the lock and ``wait_for_lock`` is False.
    """
    state = Path(state)
    state.mkdir(parents=True, exist_ok=True)
    outcome = WatchOutcome()
    with state_lock(state, wait=wait_for_lock):
        for round_in in find_rounds(folder, complete_when=complete_when):
            if not round_in.complete:
                log.info("round %d: waiting (%s)", round_in.number, round_in.reason)
                outcome.waiting.append(round_in.number)
                continue
            try:
                out = process_round(round_in, state, options=options, runner=runner)
            except (ValueError, OSError, SandboxUnavailable) as exc:
                log.error("round %d: failed: %s", round_in.number, exc)
                outcome.failed[round_in.number] = str(exc)
                break
            except Exception as exc:  # a service must outlive one round's bug; the log has it
                log.exception("round %d: campaign crashed", round_in.number)
                outcome.failed[round_in.number] = f"campaign crashed: {type(exc).__name__}: {exc}"
                break
            if out is None:
                outcome.skipped.append(round_in.number)
            else:
                outcome.processed.append(round_in.number)
    return outcome


def watch(folder: Path, state: Path, *, interval_s: float = 300.0,
          complete_when: CompleteWhen = "marker", options: dict[str, Any] | None = None,
          max_passes: int | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
    """Poll ``folder`` every ``interval_s`` seconds and process rounds as they complete.

    Raises:
        ValueError: ``interval_s`` is not positive.
    """
    if interval_s <= 0:
        raise ValueError(f"--interval must be > 0 seconds, got {interval_s}")
    passes = 0
    while max_passes is None or passes < max_passes:
        try:
            watch_once(folder, state, complete_when=complete_when, options=options)
        except WatcherBusy as exc:
            log.info("%s; retrying in %.0f s", exc, interval_s)
        passes += 1
        if max_passes is None or passes < max_passes:
            sleep(interval_s)
