"""A driver killed mid-extraction resumes: the content-hash cache is the results ledger.

The campaign's own resume goes through its LangGraph checkpoints (tests/graphs); this covers
batched extraction, the executor path that has no graph around it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd

from structcover.tools.executors import LocalExecutor
from structcover.tools.features.extract import extract_table

CORPUS = Path(__file__).resolve().parents[3] / "src" / "structcover" / "corpus"

DRIVER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from structcover.tools.executors import LocalExecutor
    from structcover.tools.features.extract import extract_table
    corpus = Path(sys.argv[1])
    pairs = [(str(p.relative_to(corpus)), p.read_text()) for p in sorted(corpus.rglob("*.cu"))]
    def progress(done):
        if done >= 20:  # the driver dies abruptly, mid-job
            os.kill(os.getpid(), signal.SIGKILL)
    with LocalExecutor(2) as ex:
        extract_table(pairs, cache_dir=Path(sys.argv[2]), chunksize=4, executor=ex,
                      on_progress=progress)
    print("finished")
""")


def _ledger(cache) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in cache.rglob("*.json")}


def test_a_killed_driver_resumes_from_the_ledger(tmp_path, corpus_programs):
    cache = tmp_path / "cache"
    log = tmp_path / "driver.log"
    with log.open("wb") as sink:
        # Output to a file, not a pipe: the dead driver's orphaned workers keep a pipe open.
        proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(CORPUS), str(cache)],
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=300)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the orphaned pool workers
            except ProcessLookupError:
                pass
    assert proc.returncode == -signal.SIGKILL, log.read_text()[-2000:]
    assert "finished" not in log.read_text()
    before = _ledger(cache)
    total = len({src for _, src in corpus_programs})
    assert 20 <= len(before) < total, "the kill should land mid-job"

    with LocalExecutor(2) as ex:
        resumed = extract_table(corpus_programs, cache_dir=cache, chunksize=4, executor=ex)
    after = _ledger(cache)
    # Rows done before the crash were read back, not recomputed (their files untouched) ...
    assert {k: after[k] for k in before} == before
    # ... the rest were computed once, and the table equals an uninterrupted run.
    assert len(after) == total
    fresh = extract_table(corpus_programs, workers=1)
    pd.testing.assert_frame_equal(resumed, fresh)
