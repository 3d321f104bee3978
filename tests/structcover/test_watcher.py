"""The watcher's round detection, idempotence, lock and resume, with a stand-in campaign."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from structcover.watcher import find_rounds, state_lock, watch_once


class RecordingRunner:
    """Stands in for run_campaign: writes a deterministic file and records its calls."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, data: Path, state: Path, opts):
        self.calls.append({"data": Path(data), "round": opts.round, "resume": opts.resume})
        out = Path(opts.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "curated.jsonl").write_text(Path(data).read_text() if Path(data).is_file() else "")
        return type("Result", (), {"added": [1, 2]})()


def _write_round(folder: Path, n: int, *, marker: bool = True) -> Path:
    path = folder / f"round_{n}.jsonl"
    path.write_text(json.dumps({"task_id": "t", "program": f"// round {n}", "speedup": 1.0}) + "\n")
    if marker:
        (folder / f"round_{n}.done").write_text("")
    return path


def test_round_without_marker_waits(tmp_path: Path):
    rollouts, state = tmp_path / "rollouts", tmp_path / "state"
    rollouts.mkdir()
    _write_round(rollouts, 0, marker=False)
    (rollouts / "round_1.jsonl.tmp").write_text("partial")
    runner = RecordingRunner()
    outcome = watch_once(rollouts, state, runner=runner)
    assert outcome.waiting == [0] and not runner.calls
    assert [r.number for r in find_rounds(rollouts)] == [0]  # the .tmp file is not a round


def test_each_round_processed_exactly_once(tmp_path: Path):
    rollouts, state = tmp_path / "rollouts", tmp_path / "state"
    rollouts.mkdir()
    _write_round(rollouts, 0)
    _write_round(rollouts, 1)
    runner = RecordingRunner()
    first = watch_once(rollouts, state, runner=runner)
    assert first.processed == [0, 1]
    snapshot = {p: p.read_bytes() for p in (state / "curated").rglob("*") if p.is_file()}
    assert {p.parent.name for p in snapshot} == {"round_1", "round_2"}
    second = watch_once(rollouts, state, runner=runner)
    assert second.skipped == [0, 1] and second.processed == []
    assert len(runner.calls) == 2
    assert snapshot == {p: p.read_bytes() for p in (state / "curated").rglob("*") if p.is_file()}


def test_changed_round_after_processing_is_refused(tmp_path: Path):
    rollouts, state = tmp_path / "rollouts", tmp_path / "state"
    rollouts.mkdir()
    path = _write_round(rollouts, 0)
    watch_once(rollouts, state, runner=RecordingRunner())
    path.write_text(path.read_text() + path.read_text())
    outcome = watch_once(rollouts, state, runner=RecordingRunner())
    assert "changed after it was processed" in outcome.failed[0]


def test_present_mode_needs_no_marker(tmp_path: Path):
    rollouts, state = tmp_path / "rollouts", tmp_path / "state"
    rollouts.mkdir()
    _write_round(rollouts, 3, marker=False)
    runner = RecordingRunner()
    assert watch_once(rollouts, state, runner=runner, complete_when="present").processed == [3]
    assert (state / "curated" / "round_4" / "curated.jsonl").exists()


def test_folder_round_with_shards_and_marker(tmp_path: Path):
    rollouts, state = tmp_path / "rollouts", tmp_path / "state"
    shard_dir = rollouts / "round_2"
    shard_dir.mkdir(parents=True)
    (shard_dir / "part-0.jsonl").write_text('{"task_id": "a", "program": "x"}\n')
    (shard_dir / "part-1.jsonl").write_text('{"task_id": "b", "program": "y"}\n')
    runner = RecordingRunner()
    assert watch_once(rollouts, state, runner=runner).waiting == [2]
    (shard_dir / "_SUCCESS").write_text("")
    assert watch_once(rollouts, state, runner=runner).processed == [2]
    joined = runner.calls[0]["data"].read_text().splitlines()
    assert [json.loads(line)["task_id"] for line in joined] == ["a", "b"]


def test_second_watcher_is_refused_while_one_works(tmp_path: Path):
    rollouts, state = tmp_path / "rollouts", tmp_path / "state"
    rollouts.mkdir()
    _write_round(rollouts, 0)
    state.mkdir()
    with state_lock(state, wait=False):
        # flock locks belong to open files: a second open in another process is refused.
        code = textwrap.dedent(f"""
            from structcover.watcher import watch_once, WatcherBusy
            try:
                watch_once({str(rollouts)!r}, {str(state)!r})
            except WatcherBusy as exc:
                print("busy:", exc)
        """)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120)
    assert "busy:" in out.stdout, out.stderr
    assert not (state / "curated").exists()
    # Released: the next watcher gets it.
    assert watch_once(rollouts, state, runner=RecordingRunner()).processed == [0]


def test_watcher_killed_mid_round_resumes(tmp_path: Path):
    rollouts, state = tmp_path / "rollouts", tmp_path / "state"
    rollouts.mkdir()
    _write_round(rollouts, 0)
    # A campaign that dies hard mid-round (as a killed process would): no cleanup runs.
    code = textwrap.dedent(f"""
        import os
        from structcover.watcher import watch_once
        def dying(data, state, opts):
            (opts.output_dir / "half-written").write_text("x")
            os._exit(9)
        watch_once({str(rollouts)!r}, {str(state)!r}, runner=dying)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    ledger = json.loads((state / "watch" / "ledger.json").read_text())
    assert ledger["0"]["status"] == "running"
    runner = RecordingRunner()
    assert watch_once(rollouts, state, runner=runner).processed == [0]
    assert runner.calls == [{"data": rollouts / "round_0.jsonl", "round": 0, "resume": True}]
    assert (state / "curated" / "round_1" / "curated.jsonl").exists()
    assert not any(p.name.endswith(".partial") for p in (state / "curated").iterdir())


def test_crashing_campaign_is_a_failed_round_not_a_dead_watcher(tmp_path: Path):
    rollouts, state = tmp_path / "rollouts", tmp_path / "state"
    rollouts.mkdir()
    _write_round(rollouts, 0)
    _write_round(rollouts, 1)

    def crashing(data, state, opts):  # noqa: ANN001
        raise TypeError("a bug in the campaign")

    outcome = watch_once(rollouts, state, runner=crashing)
    assert outcome.failed == {0: "campaign crashed: TypeError: a bug in the campaign"}
    assert outcome.processed == []  # round 1 waits for round 0
    runner = RecordingRunner()
    assert watch_once(rollouts, state, runner=runner).processed == [0, 1]
    assert runner.calls[0]["resume"] is True


def test_parquet_shards_are_joined_in_name_order(tmp_path: Path):
    import pandas as pd

    from structcover.watcher import RoundInput, _campaign_input

    folder = tmp_path / "round_3"
    (folder / "b").mkdir(parents=True)
    pd.DataFrame({"task_id": ["t"], "n": [2]}).to_parquet(folder / "b" / "part.parquet")
    pd.DataFrame({"task_id": ["t", "t"], "n": [0, 1]}).to_parquet(folder / "a.parquet")
    work = tmp_path / "work"
    joined = _campaign_input(RoundInput(number=3, path=folder, complete=True), work)
    assert joined == work / "round_3.parquet"
    assert pd.read_parquet(joined)["n"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in work.iterdir()) == ["round_3.parquet"]  # no temp file left


def test_each_round_prunes_the_build_cache_to_its_size(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    import os
    import time

    rollouts, state, cache = tmp_path / "rollouts", tmp_path / "state", tmp_path / "emulator"
    rollouts.mkdir()
    cache.mkdir()
    _write_round(rollouts, 0)
    old = cache / "kbext-old.so"
    old.write_bytes(b"x" * 2000)
    os.utime(old, (1.0, 1.0))  # built and last used long ago
    kept = cache / "libsc_kbrt-k.so"  # a shared part used two days ago: not pruned by size
    kept.write_bytes(b"x" * 2000)
    two_days_ago = time.time() - 2 * 86400
    os.utime(kept, (two_days_ago, two_days_ago))
    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_DIR", str(cache))
    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_MAX_GB", "0.000001")  # 1000 bytes
    assert watch_once(rollouts, state, runner=RecordingRunner()).processed == [0]
    assert not old.exists() and kept.exists()
