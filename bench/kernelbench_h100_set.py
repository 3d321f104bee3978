"""Build the H100 leaderboard ranking set from AffectionateCurry/KernelBench-Leaderboard's kernels.json.

The leaderboard's ``data/kernels.json`` (commit 325a5d2caea71dc3b47dadae9f574eade9aba15c) holds,
for each of KernelBench's 250 problems, the problem's source (``reference_code``), a shared
reference time (``baseline_time``, ms) and two models' solutions (``gemini_3_pro_H100``,
``gemini_3_flash_H100``: ``code``, ``correct``, ``runtime`` in ms on an H100 through Modal).
A problem enters the set when both solutions are correct, both are CUDA (``load_inline`` and
``__global__``), and their runtimes differ by at least :data:`MIN_RATIO`: the two models were
timed in separate runs, each kernel in its own container, so a smaller gap is within the
noise of the measurement (bench/data/kernelbench_h100/SOURCES.md).

Usage::

    python bench/kernelbench_h100_set.py kernels.json OUT [--dev DATA]

writes ``OUT/problems/h100_L<level>_<name>.py`` (each problem under its own name: the newer
KernelBench sizes differ from the first set's judged ones), ``OUT/solutions/<id>__<model>.py``
and ``OUT/manifest.json`` (split ``held-out``, GPU ``h100-sxm``). ``--dev DATA`` adds the
``dev`` rows of another set's manifest (and links their solutions), which the ranking bench
needs for the length sign and the trained scores. The rows are checked against
``bench/data/kernelbench_h100/manifest.json``: a rebuilt set is the set reported.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ranking_set_dev import borrow_dev_rows

SOURCE_REPO = "AffectionateCurry/KernelBench-Leaderboard"
SOURCE_COMMIT = "325a5d2caea71dc3b47dadae9f574eade9aba15c"
MODELS = ("gemini_3_flash_H100", "gemini_3_pro_H100")
#: The smallest slower/faster runtime ratio of a pair kept.
MIN_RATIO = 1.10
REFERENCE = Path(__file__).parent / "data" / "kernelbench_h100" / "manifest.json"


def selected(entry: dict) -> bool:
    """Both solutions correct CUDA, runtimes at least :data:`MIN_RATIO` apart."""
    models = entry.get("models", {})
    if not all(m in models for m in MODELS):
        return False
    runs = [models[m] for m in MODELS]
    if not all(r.get("correct") is True and float(r.get("runtime", -1)) > 0 for r in runs):
        return False
    if not all("load_inline" in r.get("code", "") and "__global__" in r.get("code", "")
               for r in runs):
        return False
    times = sorted(float(r["runtime"]) for r in runs)
    return times[1] / times[0] >= MIN_RATIO


def rows_of(entry: dict) -> list[dict]:
    """Manifest rows of one selected entry (one per model)."""
    name = f"h100_L{entry['level']}_{entry['filename'].removesuffix('.py')}"
    return [{"file": f"{entry['id']}__{model}.py", "problem": name, "level": entry["level"],
             "model": model, "torch_speedup": entry["baseline_time"] / entry["models"][model]["runtime"],
             "runtime_ms": entry["models"][model]["runtime"], "baseline_ms": entry["baseline_time"],
             "split": "held-out", "source_repo": SOURCE_REPO, "source_commit": SOURCE_COMMIT,
             "source_path": f"data/kernels.json: {entry['id']}.models.{model}.code",
             "problem_source": {"repo": SOURCE_REPO, "commit": SOURCE_COMMIT,
                                "path": f"data/kernels.json: {entry['id']}.reference_code"}}
            for model in MODELS]


def build(entries: list[dict], out: Path, dev: Path | None) -> list[dict]:
    """Write the set's files under ``out``; return its held-out rows."""
    (out / "problems").mkdir(parents=True, exist_ok=True)
    (out / "solutions").mkdir(parents=True, exist_ok=True)
    held: list[dict] = []
    for entry in entries:
        if not selected(entry):
            continue
        rows = rows_of(entry)
        (out / "problems" / f"{rows[0]['problem']}.py").write_text(entry["reference_code"])
        for row in rows:
            (out / "solutions" / row["file"]).write_text(entry["models"][row["model"]]["code"])
        held += rows
    dev_rows = borrow_dev_rows(dev, out)
    (out / "manifest.json").write_text(json.dumps({"gpu": "h100-sxm",
                                                   "solutions": dev_rows + held}, indent=1))
    return held


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("kernels_json", type=Path, help="the leaderboard's data/kernels.json")
    ap.add_argument("out", type=Path, help="folder to write the set to")
    ap.add_argument("--dev", type=Path, help="a ranking set whose dev rows to add")
    args = ap.parse_args()
    try:
        entries = json.loads(args.kernels_json.read_text())["kernels"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"{args.kernels_json}: not the leaderboard's kernels.json ({exc})", file=sys.stderr)
        return 2
    held = build(entries, args.out, args.dev)
    expected = json.loads(REFERENCE.read_text())["solutions"]
    key = lambda r: (r["file"], round(r["runtime_ms"], 6))  # noqa: E731
    if sorted(map(key, held)) != sorted(map(key, expected)):
        print(f"warning: {len(held)} rows differ from the {len(expected)} of {REFERENCE}",
              file=sys.stderr)
    print(f"{len(held)} held-out rows over {len({r['problem'] for r in held})} problems "
          f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
