"""Benchmark: rank same-problem pairs of PUBLIC KernelBench solutions (issue 26, point 6).

Data (not shipped: the solutions carry no licence): a folder with ``manifest.json`` (a list of
``{"file", "problem", "model", "torch_speedup", "split"}``, split ``dev`` or ``held-out``) and
``solutions/<file>``; the problems (KernelBench level 1 reference files) in ``--problems``.
Within a problem every solution was timed against the same reference on one GPU, so the one
with the larger ``torch_speedup`` is the faster; ties are skipped, and so are held-out pairs
closer than the manifest's optional ``min_pair_ratio`` (the set's label resolution).

Per solution: code length (non-blank lines of its CUDA sources), the static features
(``extract_values``), the profile features and the timing model's time (``features
--profile``'s columns: tools/simulation/kb_profile*.py, CPU emulator at reduced sizes, model
at the problem's sizes on the GPU the timings were measured on: the manifest's ``gpu`` key, a
name of ``gpu_specs.GPUS``, else ``--gpu``, else the default). Scores, each compared on the
same pairs:

* ``length``: shorter or longer is faster, the sign picked on DEV;
* ``timing model``: smaller modelled time is faster (no fit);
* ``static``, ``profile``, ``static+profile``: an L2 logistic model on pair differences of
  standardized features, fitted on DEV pairs (DEV figures: leave-one-problem-out, so no pair
  is scored by a model that saw its problem); HELD-OUT: the model fitted on all of DEV.

Run::

    python bench/bench_kernelbench_ranking.py --data /work/public_data/kbl \\
        --problems bench/data/kernelbench_l1/problems_judged bench/data/kernelbench_l1/problems \\
        [--dev-only] [--json OUT.json]

(the level-2 set: ``--problems bench/data/kernelbench_l2/problems``; the level-3 set:
``--problems bench/data/kernelbench_l3/problems`` followed by the level-1 folders for the dev
rows; the H100 and RTX 4090 sets, built by ``bench/kernelbench_h100_set.py`` and
``bench/kernelbench_rtx4090_set.py``: ``--problems OUT/problems`` followed by the level-1 folders)

``--dev-only`` never touches the held-out rows (use it while choosing anything).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from structcover.tools.data.kernelbench import extract_cuda_sources
from structcover.tools.features.extract import extract_values
from structcover.tools.kernelbench.problem import Problem, load_problem
from structcover.tools.simulation.gpu_specs import DEFAULT_GPU, GpuSpec, gpu_spec
from structcover.tools.simulation.kb_profile import profile_candidate
from structcover.tools.simulation.kb_profile_features import COLUMNS, profile_features

#: Profile columns the fitted profile score uses (counts get log10; ratios as they are).
#: torch's own traffic is 0 for most candidates, so it stays linear (a log would put those at
#: the clip, -9).
LOG_COLUMNS = [c for c in COLUMNS if (c.endswith("_per_el") and c != "profile.torch_bytes_per_el")
               or c in ("profile.launches", "profile.kernels", "profile.threads_per_block")]
RATIO_COLUMNS = ["profile.load_sectors_per_request", "profile.store_sectors_per_request",
                 "profile.load_bytes_per_sector", "profile.divergent_fraction",
                 "profile.traffic_over_compulsory", "profile.model_log10_time",
                 "profile.torch_bytes_per_el", "profile.torch_launches"]
#: Regularization of the logistic models (fixed, not tuned).
C = 0.1


def _problem_file(problems: list[Path], name: str) -> Path | None:
    """The problem file of ``name`` in the first folder that has one (a folder of judged
    versions first, then the folder they override)."""
    for folder in problems:
        for cand in (folder / f"{name}.py", *folder.glob(f"{name}*.py")):
            if cand.is_file():
                return cand
    return None


def load_rows(data: Path, problems: list[Path]) -> pd.DataFrame:
    """The manifest as a frame, with the solution text and its problem file."""
    manifest = json.loads((data / "manifest.json").read_text())
    # The leaderboard manifest is an object with its provenance beside the rows.
    entries = manifest["solutions"] if isinstance(manifest, dict) else manifest
    rows = []
    for m in entries:
        text = (data / "solutions" / m["file"]).read_text(encoding="utf-8", errors="replace")
        path = _problem_file(problems, str(m["problem"]))
        # One spelling of the held-out split here, whichever the manifest uses.
        split = "held-out" if m["split"] in ("heldout", "held-out") else m["split"]
        rows.append({**m, "split": split, "text": text,
                     "problem_file": str(path) if path else ""})
    return pd.DataFrame(rows)


def length(text: str) -> int:
    """Non-blank lines of the solution's CUDA sources (the whole file when none is found)."""
    cuda = "\n".join(extract_cuda_sources(text)) or text
    return sum(1 for line in cuda.splitlines() if line.strip())


def profile_all(frame: pd.DataFrame, threads: int, budget: float | None, gpu: GpuSpec
                ) -> pd.DataFrame:
    """``profile.*`` columns of every row (a reason where it could not run)."""
    cache: dict[str, Problem] = {}

    def one(i: int) -> dict:
        row = frame.iloc[i]
        if not row["problem_file"]:
            return {"profile.reason": "no-problem: problem file not found"}
        problem = cache.setdefault(row["problem_file"], load_problem(row["problem_file"]))
        start = time.monotonic()
        prof = profile_candidate(row["text"], problem, budget=budget)
        out = profile_features(prof, problem.work(), gpu)
        out["profile.seconds"] = time.monotonic() - start
        print(f"  [{i + 1}/{len(frame)}] {row['problem']} {row['model']}: "
              f"{out['profile.reason'] or 'ok'} ({out['profile.seconds']:.0f} s)",
              file=sys.stderr, flush=True)
        return out

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        return pd.DataFrame(list(pool.map(one, range(len(frame)))), index=frame.index)


def pairs(frame: pd.DataFrame, split: str, min_ratio: float = 1.0) -> list[tuple[int, int]]:
    """(faster, slower) index pairs within each problem of ``split``; ties skipped, and pairs
    whose speedups are less than ``min_ratio`` apart (a set's label resolution: a manifest's
    ``min_pair_ratio``, for the held-out rows)."""
    out = []
    sub = frame[frame["split"] == split]
    for _, group in sub.groupby("problem"):
        idx = list(group.index)
        for a_pos, a in enumerate(idx):
            for b in idx[a_pos + 1:]:
                sa, sb = frame.at[a, "torch_speedup"], frame.at[b, "torch_speedup"]
                if sa != sb and max(sa, sb) >= min_ratio * min(sa, sb):
                    out.append((a, b) if sa > sb else (b, a))
    return out


def accuracy(score: np.ndarray, prs: list[tuple[int, int]]) -> float:
    """Pairs whose faster member scores higher (ties and NaN half)."""
    credit = 0.0
    for fast, slow in prs:
        d = score[fast] - score[slow]
        credit += 0.5 if not np.isfinite(d) or d == 0 else float(d > 0)
    return credit / len(prs) if prs else math.nan


def _design(x: pd.DataFrame, prs: list[tuple[int, int]], mu: pd.Series, sd: pd.Series
            ) -> np.ndarray:
    z = ((x - mu) / sd).fillna(0.0).to_numpy(float)
    return np.array([z[a] - z[b] for a, b in prs])


def fitted_scores(x: pd.DataFrame, train: list[tuple[int, int]]) -> np.ndarray:
    """Per-row scores of a logistic model fitted on pair differences of ``train``."""
    mu, sd = x.mean(), x.std().replace(0.0, 1.0).fillna(1.0)
    d = _design(x, train, mu, sd)
    model = LogisticRegression(C=C, fit_intercept=False, max_iter=2000)
    model.fit(np.vstack([d, -d]), np.r_[np.ones(len(d)), np.zeros(len(d))])
    return ((x - mu) / sd).fillna(0.0).to_numpy(float) @ model.coef_[0]


def loo_accuracy(x: pd.DataFrame, frame: pd.DataFrame, prs: list[tuple[int, int]]) -> float:
    """Leave-one-problem-out accuracy on ``prs`` (each problem scored by a model fit on the
    others' pairs)."""
    credit = n = 0.0
    for problem in sorted({frame.at[a, "problem"] for a, _ in prs}):
        test = [p for p in prs if frame.at[p[0], "problem"] == problem]
        train = [p for p in prs if frame.at[p[0], "problem"] != problem]
        if not train:
            continue
        credit += accuracy(fitted_scores(x, train), test) * len(test)
        n += len(test)
    return credit / n if n else math.nan


def feature_sets(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The static and profile matrices (numeric columns that vary)."""
    static = frame[[c for c in frame.columns if c.startswith("static.")]]
    static = static.apply(pd.to_numeric, errors="coerce")
    static = static.loc[:, static.std() > 0]
    prof = pd.concat([np.log10(frame[LOG_COLUMNS].astype(float).clip(lower=1e-9)),
                      frame[RATIO_COLUMNS].astype(float)], axis=1)
    return {"static": static, "profile": prof,
            "static+profile": pd.concat([static, prof], axis=1)}


def evaluate(frame: pd.DataFrame, dev_only: bool, held_min_ratio: float = 1.0) -> dict:
    """Accuracies per score on DEV (and HELD-OUT unless ``dev_only``, its pairs at least
    ``held_min_ratio`` apart), all pairs and the pairs whose two members both profiled."""
    ok = frame["profile.reason"].fillna("x") == ""
    sets = feature_sets(frame)
    dev = pairs(frame, "dev")
    held = [] if dev_only else pairs(frame, "held-out", held_min_ratio)
    both = {name: [p for p in prs if ok[p[0]] and ok[p[1]]] for name, prs in
            (("dev", dev), ("held-out", held))}
    lengths = frame["length"].to_numpy(float)
    sign = 1.0 if accuracy(lengths, dev) > 0.5 else -1.0  # on DEV only
    model = -frame["profile.model_time_s"].to_numpy(float)
    out: dict = {"length_sign": "longer is faster" if sign > 0 else "shorter is faster",
                 "profiled": int(ok.sum()), "rows": len(frame)}
    for subset, name_pairs in (("all pairs", {"dev": dev, "held-out": held}),
                               ("both profiled", both)):
        table: dict = {}
        for split, prs in name_pairs.items():
            if split == "held-out" and dev_only:
                continue
            train = dev if subset == "all pairs" else both["dev"]
            row = {"pairs": len(prs), "length": accuracy(sign * lengths, prs),
                   "timing model": accuracy(model, prs)}
            for key, x in sets.items():
                row[key] = (loo_accuracy(x, frame, prs) if split == "dev"
                            else accuracy(fitted_scores(x, train), prs))
            table[split] = {k: (round(v, 3) if isinstance(v, float) else v)
                            for k, v in row.items()}
        out[subset] = table
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--problems", type=Path, nargs="+", required=True,
                    help="problem folders, searched in order (e.g. the judged versions, then "
                         "the folder they override)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--budget", type=float, default=None, help="CPU work budget (default: "
                    "verification's)")
    ap.add_argument("--dev-only", action="store_true")
    ap.add_argument("--gpu", help="GPU spec of the timing model (default: the manifest's "
                    "'gpu', else " + DEFAULT_GPU + ")")
    ap.add_argument("--json", type=Path, help="write the per-row table and results here")
    args = ap.parse_args()
    frame = load_rows(args.data, args.problems)
    if args.dev_only:
        frame = frame[frame["split"] == "dev"].reset_index(drop=True)
    frame["length"] = [length(t) for t in frame["text"]]
    static = pd.DataFrame([extract_values(t) for t in frame["text"]]).add_prefix("static.")
    start = time.monotonic()
    manifest = json.loads((args.data / "manifest.json").read_text())
    gpu_name = args.gpu or (manifest.get("gpu") if isinstance(manifest, dict) else None) \
        or DEFAULT_GPU
    prof = profile_all(frame, args.threads, args.budget, gpu_spec(gpu_name))
    frame = pd.concat([frame, static, prof], axis=1)
    min_ratio = float(manifest.get("min_pair_ratio", 1.0)) if isinstance(manifest, dict) \
        else 1.0
    results = evaluate(frame, args.dev_only, min_ratio)
    results["held_out_min_pair_ratio"] = min_ratio
    results["profile_wall_s"] = round(time.monotonic() - start, 1)
    results["gpu"] = gpu_name
    results["failures"] = frame.loc[frame["profile.reason"] != "", ["problem", "model",
                                                                    "profile.reason"]] \
        .to_dict(orient="records")
    print(json.dumps({k: v for k, v in results.items() if k != "failures"}, indent=1))
    for f in results["failures"]:
        print(f"unprofiled: {f['problem']} {f['model']}: {f['profile.reason'][:160]}")
    if args.json:
        keep = ["file", "problem", "model", "split", "torch_speedup", "length",
                "profile.reason", "profile.model_time_s", "profile.seconds"]
        args.json.write_text(json.dumps({"results": results, "rows": frame[keep].to_dict(
            orient="records")}, indent=1, default=str))


if __name__ == "__main__":
    main()
