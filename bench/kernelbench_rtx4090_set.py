"""Build the RTX 4090 ranking set from yenhao-huang/KernelBench's retimed runs.

The repository (commit :data:`SOURCE_COMMIT`) holds four models' KernelBench runs, each timed
with KernelBench's ``eval_kernel_against_ref`` on one NVIDIA GeForce RTX 4090 (5 correctness
trials, 100 timing trials): ``runs/<run>_l<level>/eval_results.json``
(``{pid: [{sample_id, compiled, correctness, runtime, runtime_stats, metadata}]}``, runtime in
ms) beside ``level_<N>_problem_<M>_sample_<S>_kernel.py``. In the three ``*_retime`` runs a
kernel file is a symbolic link (its stored text is the relative target, e.g.
``../ralph_codex_cuda_all/generated_kernels/level_1/problem_12.py``); it is resolved against
the run's folder.

Selection (fixed before anything was profiled; bench/data/kernelbench_rtx4090/SOURCES.md):
level 1 (:data:`LEVELS`), the runs of :data:`RUNS`; a record is kept when ``correctness`` is true, ``runtime``
> 0, nothing in it is a truthy ``excessive_speedup``, ``runtime_stats.hardware`` names a 4090
and its kernel has both ``load_inline`` and ``__global__``; a problem enters when at least two
records (two models) are kept, with all its kept records.

Usage::

    python bench/kernelbench_rtx4090_set.py SRC OUT --problems-json kernels.json [--dev DATA]
    python bench/kernelbench_rtx4090_set.py SRC OUT --problems-dir KernelBench [--dev DATA]

``SRC`` is a copy of the repository's ``runs/`` tree (``SRC/runs/...``, repository paths kept:
the eval results and the kernel files, link targets included). The problems are the newer
upstream KernelBench texts: either AffectionateCurry/KernelBench-Leaderboard's
``data/kernels.json`` (:data:`PROBLEMS_COMMIT`; ``reference_code`` of each ``level``/``filename``)
or a KernelBench folder with ``level1/``, ``level2/``, ``level3/`` (problem ``M`` of level ``N``
is the file of ``levelN`` whose name starts with ``M_``). Writes
``OUT/problems/rtx4090_L<level>_<stem>.py``, ``OUT/solutions/L<level>_<pid>__<model>.py`` and
``OUT/manifest.json`` (split ``held-out``, GPU ``rtx4090``, ``min_pair_ratio``). ``--dev DATA``
adds the ``dev`` rows of another set's manifest (and links their solutions). The rows are
checked against ``bench/data/kernelbench_rtx4090/manifest.json``: a rebuilt set is the set
reported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ranking_set_dev import borrow_dev_rows

SOURCE_REPO = "yenhao-huang/KernelBench"
SOURCE_COMMIT = "553f4544d39517e2031fcf5b23a8a4ccff675921"
PROBLEMS_REPO = "AffectionateCurry/KernelBench-Leaderboard"
PROBLEMS_COMMIT = "325a5d2caea71dc3b47dadae9f574eade9aba15c"
#: The runs read, each ``runs/<run>_l<level>``; the run name is the row's ``model``.
RUNS = ("codex_gpt55_retime", "gemma4_retime", "qwen36_retime",
        "openrouter_deepseek_v4_pro_leaderboard")
#: Level 1 only: the stored index has no bulk access, so every record and kernel of the set was
#: copied page by page (SOURCES.md); levels 2 and 3 are 4x the text. Decided before profiling.
LEVELS = (1,)
#: Pairs whose runtimes are closer than this ratio are not counted (the bench's label noise).
MIN_PAIR_RATIO = 1.10
REFERENCE = Path(__file__).parent / "data" / "kernelbench_rtx4090" / "manifest.json"

Record = dict[str, Any]


def flagged(obj: object) -> bool:
    """Whether a truthy ``excessive_speedup`` field sits anywhere in ``obj``."""
    if isinstance(obj, dict):
        return any((k == "excessive_speedup" and bool(v)) or flagged(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(flagged(v) for v in obj)
    return False


def record_ok(record: Record) -> bool:
    """The label half of the rule: correct, timed, not flagged, timed on a 4090."""
    stats = record.get("runtime_stats") or {}
    try:
        runtime = float(record.get("runtime", -1))
    except (TypeError, ValueError):
        return False
    return (record.get("correctness") is True and runtime > 0 and not flagged(record)
            and "4090" in str(stats.get("hardware", "")))


def is_cuda(text: str) -> bool:
    """The text half of the rule: an inline CUDA extension with a kernel of its own."""
    return "load_inline" in text and "__global__" in text


def kernel_path(src: Path, run_dir: str, level: int, pid: str, sample: int) -> str | None:
    """Repository path of a record's kernel, its link followed; None when not in ``src``."""
    rel = f"{run_dir}/level_{level}_problem_{pid}_sample_{sample}_kernel.py"
    path = src / rel
    if not path.exists():
        return None
    if path.is_symlink():
        target = os.readlink(path)
    else:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
        # The index stores a link as its target text: one relative path to a .py file.
        if "\n" in text or not text.endswith(".py") or not text.startswith("../"):
            return rel
        target = text
    return os.path.normpath(f"{run_dir}/{target}")


def problem_texts(problems_json: Path | None, problems_dir: Path | None, dir_source: str = "",
                  levels: tuple[int, ...] = LEVELS
                  ) -> dict[tuple[int, str], tuple[str, str, dict[str, str]]]:
    """(level, pid) -> (file stem, problem text, its source) from either problems source.

    Args:
        problems_json: the leaderboard's ``data/kernels.json`` (takes precedence).
        problems_dir: a KernelBench folder holding ``level1/`` .. ``level3/``.
        dir_source: ``REPO@COMMIT`` the folder was copied from, recorded in the rows.
        levels: the levels read from ``problems_dir``.
    """
    dir_repo, _, dir_commit = dir_source.partition("@")
    out: dict[tuple[int, str], tuple[str, str, dict[str, str]]] = {}
    if problems_json is not None:
        for entry in json.loads(problems_json.read_text())["kernels"]:
            stem = str(entry["filename"]).removesuffix(".py")
            out[(int(entry["level"]), stem.split("_", 1)[0])] = (
                stem, entry["reference_code"],
                {"repo": PROBLEMS_REPO, "commit": PROBLEMS_COMMIT,
                 "path": f"data/kernels.json: {entry['id']}.reference_code"})
    if problems_dir is not None:
        for level in levels:
            for path in sorted((problems_dir / f"level{level}").glob("*.py")):
                # A folder of texts taken from the leaderboard's kernels.json names that file.
                where = (f"data/kernels.json: level {level} {path.name} reference_code"
                         if dir_repo == PROBLEMS_REPO else f"KernelBench/level{level}/{path.name}")
                out.setdefault((level, path.stem.split("_", 1)[0]), (
                    path.stem, path.read_text(),
                    {"repo": dir_repo, "commit": dir_commit, "path": where}))
    return out


def candidates(src: Path, levels: tuple[int, ...] = LEVELS) -> list[Record]:
    """Every record of ``levels`` that passes the rule, with its kernel text and level."""
    kept: list[Record] = []
    for run in RUNS:
        for level in levels:
            run_dir = f"runs/{run}_l{level}"
            results = src / run_dir / "eval_results.json"
            if not results.exists():
                print(f"warning: {results} missing", file=sys.stderr)
                continue
            for pid, records in json.loads(results.read_text()).items():
                for record in records:
                    if not record_ok(record):
                        continue
                    rel = kernel_path(src, run_dir, level, pid, int(record.get("sample_id", 0)))
                    if rel is None or not (src / rel).exists():
                        print(f"warning: {run_dir} problem {pid}: kernel not in {src}",
                              file=sys.stderr)
                        continue
                    text = (src / rel).read_text(encoding="utf-8", errors="replace")
                    if is_cuda(text):
                        kept.append({"level": level, "pid": pid, "model": run, "path": rel,
                                     "text": text, "runtime_ms": float(record["runtime"])})
    return kept


def select(kept: list[Record]) -> dict[tuple[int, str], list[Record]]:
    """Problems with kept records from at least two models, each with all its kept records."""
    by_problem: dict[tuple[int, str], list[Record]] = {}
    for rec in kept:
        by_problem.setdefault((rec["level"], rec["pid"]), []).append(rec)
    out = {}
    for key, recs in by_problem.items():
        if len({r["model"] for r in recs}) != len(recs):
            raise ValueError(f"L{key[0]} problem {key[1]}: two kept samples of one model")
        if len(recs) >= 2:
            out[key] = sorted(recs, key=lambda r: RUNS.index(r["model"]))
    return out


def build(src: Path, out: Path, problems: dict[tuple[int, str], tuple[str, str, dict[str, str]]],
          dev: Path | None, levels: tuple[int, ...] = LEVELS) -> list[Record]:
    """Write the set's files under ``out``; return its held-out rows."""
    (out / "problems").mkdir(parents=True, exist_ok=True)
    (out / "solutions").mkdir(parents=True, exist_ok=True)
    held: list[Record] = []
    for (level, pid), recs in sorted(select(candidates(src, levels)).items(),
                                     key=lambda kv: (kv[0][0], int(kv[0][1]))):
        if (level, pid) not in problems:
            print(f"warning: no problem text for level {level} problem {pid}; skipped",
                  file=sys.stderr)
            continue
        stem, text, source = problems[(level, pid)]
        name = f"rtx4090_L{level}_{stem}"
        (out / "problems" / f"{name}.py").write_text(text)
        for rec in recs:
            row = {"file": f"L{level}_{pid}__{rec['model']}.py", "problem": name,
                   "level": level, "model": rec["model"], "runtime_ms": rec["runtime_ms"],
                   "torch_speedup": 1.0 / rec["runtime_ms"], "split": "held-out",
                   "source_repo": SOURCE_REPO, "source_commit": SOURCE_COMMIT,
                   "source_path": rec["path"], "problem_source": source}
            (out / "solutions" / row["file"]).write_text(rec["text"])
            held.append(row)
    dev_rows = borrow_dev_rows(dev, out)
    (out / "manifest.json").write_text(json.dumps(
        {"gpu": "rtx4090", "min_pair_ratio": MIN_PAIR_RATIO, "solutions": dev_rows + held},
        indent=1))
    return held


def main() -> int:
    """Parse the arguments, build the set and compare it with the stored manifest."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    ap.add_argument("src", type=Path, help="copy of the repository (holds runs/)")
    ap.add_argument("out", type=Path, help="folder to write the set to")
    ap.add_argument("--problems-json", type=Path, help="the leaderboard's data/kernels.json")
    ap.add_argument("--problems-dir", type=Path, help="a KernelBench folder with levelN/")
    ap.add_argument("--problems-source", default="", help="REPO@COMMIT of --problems-dir")
    ap.add_argument("--dev", type=Path, help="a ranking set whose dev rows to add")
    ap.add_argument("--level", type=int, action="append", choices=(1, 2, 3),
                    help="a level to read (repeatable; default: the stored set's, level 1); "
                         "another level is another set: give it its own --reference")
    ap.add_argument("--reference", type=Path, default=REFERENCE,
                    help="the stored manifest the rows are checked against")
    args = ap.parse_args()
    levels = tuple(args.level or LEVELS)
    if args.problems_json is None and args.problems_dir is None:
        ap.error("give --problems-json or --problems-dir")
    try:
        problems = problem_texts(args.problems_json, args.problems_dir, args.problems_source,
                                 levels)
    except (OSError, ValueError, KeyError) as exc:
        print(f"problems source unreadable ({exc})", file=sys.stderr)
        return 2
    held = build(args.src, args.out, problems, args.dev, levels)
    reference: Path = args.reference
    if reference.exists():
        expected = json.loads(reference.read_text())["solutions"]
        key = lambda r: (r["file"], r["problem"], round(r["runtime_ms"], 6))  # noqa: E731
        if sorted(map(key, held)) != sorted(map(key, expected)):
            print(f"warning: {len(held)} rows differ from the {len(expected)} of {reference}",
                  file=sys.stderr)
    else:
        print(f"warning: no reference manifest at {reference}", file=sys.stderr)
    print(f"{len(held)} held-out rows over {len({r['problem'] for r in held})} problems "
          f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
