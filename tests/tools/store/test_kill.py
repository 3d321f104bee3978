"""A writer killed mid-batch leaves a store that reopens whole: no partial batch, index in sync."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from structcover.tools.store import MemoryStore

BATCH = 40

_WRITER = f"""
import sys
from structcover.tools.store import AttemptRecord, MemoryStore, ProgramRecord
store = MemoryStore.open(sys.argv[1])
for b in range(10_000):
    recs = [ProgramRecord(task=f"batch{{b}}", source=f"// b{{b}} p{{i}}", verified=True, round=0,
                          features={{"x": float(i), "y": float(b % 7), "z": float(i * b % 5)}})
            for i in range({BATCH})]
    store.add_programs(recs)
    store.record_attempt(f"batch{{b}}", "bin", AttemptRecord(round=0, outcome="filled",
                                                             stage="passed"))
    print(b, flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.13, 0.37])
def test_killed_writer_leaves_whole_batches(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "memory"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    done = 0
    deadline = time.monotonic() + 120
    while done < 3 and time.monotonic() < deadline:  # let a few batches commit first
        line = proc.stdout.readline()
        if not line:
            break
        done += 1
    time.sleep(delay)  # then kill at a different point of the next batches
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert done >= 3, "writer never committed three batches"

    store = MemoryStore.open(path)
    progs = store.programs()
    per_batch: dict[str, int] = {}
    for p in progs:
        per_batch[p.task] = per_batch.get(p.task, 0) + 1
    assert len(per_batch) >= 3
    assert set(per_batch.values()) == {BATCH}, f"partial batch after kill: {per_batch}"
    # the index holds exactly the ledger's programs, and look-ups return committed ones
    assert store._index is not None and store._index.ids() == {p.program_id for p in progs}
    near = store.nearest({"x": 3.0, "y": 1.0, "z": 2.0}, k=5)
    assert len(near) == 5 and all(n.program.task in per_batch for n in near)
    # attempts commit apart from their batch: at most one batch lacks its attempt
    filled = {g.task for g in store.gaps(status="filled")}
    assert filled <= set(per_batch) and len(set(per_batch) - filled) <= 1
    store.close()
