"""Campaign throughput: candidates judged per minute, on the demo corpus and on KernelBench rollouts.

Two workloads, each a real offline campaign (operators applied, every candidate compiled,
anti-hacking checked and verified on the CPU emulator in the jail):

* ``demo``: the demo's data (the sample corpus, three simulated rounds, discovery and the
  frozen archive), then a campaign on the last round over ``--tasks`` (``quick``: the quick
  demo's five tasks; ``full``: every task; or a comma-separated list).
* ``kernelbench``: KernelBench-format rollouts (``ModelNew`` with ``load_inline`` CUDA) of two
  problems written here, task ids naming problems in a problems folder; the candidates run
  through the KernelBench protocol on the CPU path (needs torch).

Only the campaign is timed (``run_campaign``: its diagnosis, synthesis, verification and
export), from the same prepared state each time. ``--cold`` runs in a child whose ``HOME`` is
an empty folder, so no compile or emulator build is cached (a new machine's first run).
Side by side: run the same command from two checkouts (``--label``) one after the other and
compare; ``--json`` prints one line per run for that.

``--runs N`` times N campaigns in one process (from the second on, the process is warm, as a
watcher's is); ``--fresh-builds`` (kernelbench) makes every extension text new per run, so each
candidate pays its build (the worst case: a round of rollouts never seen before).
``STRUCTCOVER_KB_ZYGOTE=0`` runs the KernelBench children one-shot (side by side with the zygote).

Usage: ``python bench/bench_campaign.py demo [--tasks quick] [--budget 120] [--cold]``;
``python bench/bench_campaign.py kernelbench [--budget 24] [--cold] [--runs 2] [--fresh-builds]
[--public MANIFEST_DIR PROBLEMS]`` (``--public``: the public leaderboard solutions of
``bench_public_correct.py`` as round-0 rollouts, a real round instead of the two sample problems).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _demo_state(out: Path, seed: int) -> tuple[Path, Path, int]:
    """The demo's rollouts and state up to the campaign: (rollouts, state, last round)."""
    from structcover.config import load_settings
    from structcover.demo import DEMO_BOOTSTRAP
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.data.datasets import write_parquet
    from structcover.tools.simulation.simulate import SimulationSettings, simulate

    settings = load_settings()
    table = simulate(SimulationSettings(rounds=3, collapse=0.6, seed=seed), families=load_corpus())
    rollouts = write_parquet(table, out / "rollouts.parquet")
    discovery = settings.discovery.model_copy(update={"bootstrap": DEMO_BOOTSTRAP})
    for n in range(3):
        run_diagnosis(table[table["round"] == n], out / "state", round=n,
                      settings=settings.archive, discovery_settings=discovery, seed=seed)
    return Path(rollouts), out / "state", 2


def _kernelbench_state(out: Path, seed: int) -> tuple[Path, Path, Path]:
    """The sample KernelBench rollouts and their problems folder: (rollouts, state, problems)."""
    from structcover.tools.simulation.kernelbench_sample import write_sample

    data, problems = write_sample(out, seed)
    return data, out / "state", problems


def _public_state(out: Path, manifest_dir: Path, problems: Path) -> tuple[Path, Path, Path]:
    """Rollouts from public KernelBench solutions: a manifest (``solutions``: ``file``,
    ``problem``, ``torch_speedup``) beside a ``solutions/`` folder, as ``bench_public_correct.py``
    reads them; each solution one correct round-0 rollout of its problem, its measured speedup
    the reward. (rollouts, state, problems)."""
    import pandas as pd

    manifest = json.loads((manifest_dir / "manifest.json").read_text())
    rows = [{"task_id": s["problem"], "program": (manifest_dir / "solutions" / s["file"]).read_text(),
             "round": 0, "correct": True, "speedup": float(s["torch_speedup"])}
            for s in manifest["solutions"] if (problems / f"{s['problem']}.py").is_file()]
    data = out / "rollouts.parquet"
    pd.DataFrame(rows).to_parquet(data)
    return data, out / "state", problems


def run(workload: str, budget: int, tasks: str, seed: int,
        public: tuple[Path, Path] | None = None, concurrency: int | None = None) -> dict:
    """Prepare ``workload``'s data, then time one campaign over it."""
    from structcover import demo
    from structcover.campaign import run_campaign

    # An older checkout (side by side) may predate the quick demo's task focus.
    quick = list(getattr(demo, "DEMO_TASKS", ()))
    focus = {} if "tasks" not in demo.CampaignOptions.model_fields else {"tasks": None}
    extra = {} if concurrency is None else {"concurrency": concurrency}  # over the demo's

    out = Path(tempfile.mkdtemp(prefix=f"bench-campaign-{workload}-"))
    start = time.perf_counter()
    if workload == "demo":
        data, state, last = _demo_state(out, seed)
        chosen = quick if tasks == "quick" else None if tasks == "full" else tasks.split(",")
        if chosen and not focus:
            raise SystemExit("this checkout's campaign has no task focus: use --tasks full")
        options = demo.demo_campaign_options(budget=budget, seed=seed, round=last,
                                             output_dir=out / "campaign",
                                             **extra, **({"tasks": chosen} if focus else {}))
    else:
        data, state, problems = (_public_state(out, *public) if public
                                 else _kernelbench_state(out, seed))
        options = demo.demo_campaign_options(budget=budget, seed=seed, problems=problems,
                                             target_scov=1.0, output_dir=out / "campaign",
                                             **focus, **extra)
    prepared = time.perf_counter() - start
    start = time.perf_counter()
    result = run_campaign(data, state, options)
    wall = time.perf_counter() - start
    return {"workload": workload, "tasks": tasks if workload == "demo" else
            f"public solutions of {public[0].name}" if public else "2 problems",
            "budget": budget, "candidates": result.candidates, "verified": result.verified,
            "added": len(result.added), "scov_before": result.scov_before,
            "scov_after": result.scov_after, "stopped": result.stopped,
            "campaign_wall_s": round(wall, 1), "prepare_wall_s": round(prepared, 1),
            "candidates_per_min": round(60 * result.candidates / wall, 1) if wall else 0.0,
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                       f"Python {platform.python_version()}",
            "load_average": [round(x, 1) for x in os.getloadavg()]}


def _fresh_builds() -> None:
    """Every KernelBench extension text made new (a comment with a fresh nonce per run), so no
    candidate's build comes from the cache: the worst case of a round of unseen rollouts."""
    import secrets

    import structcover.tools.kernelbench.cpu_build as cpu_build

    original = getattr(cpu_build.translation_unit, "__wrapped__", cpu_build.translation_unit)
    nonce = secrets.token_hex(8)

    def translation_unit(ext: object, **kw: object) -> tuple[str, list[str]]:
        text, ignored = original(ext, **kw)
        return f"{text}\n// bench_campaign nonce {nonce}\n", ignored

    translation_unit.__wrapped__ = original  # type: ignore[attr-defined]
    cpu_build.translation_unit = translation_unit  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["demo", "kernelbench"])
    parser.add_argument("--budget", type=int, default=120)
    parser.add_argument("--tasks", default="quick",
                        help="demo: quick (the quick demo's tasks), full, or a,b,c")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cold", action="store_true", help="empty caches (HOME a new folder)")
    parser.add_argument("--label", default="", help="a name for this checkout in the output")
    parser.add_argument("--json", action="store_true", help="one JSON line per run")
    parser.add_argument("--runs", type=int, default=1,
                        help="campaigns in this one process (the 2nd on is a warm process, "
                             "as in the watcher)")
    parser.add_argument("--public", type=Path, nargs=2, metavar=("MANIFEST_DIR", "PROBLEMS"),
                        help="kernelbench: rollouts from public solutions (manifest.json and "
                             "solutions/ in MANIFEST_DIR) over the problem files in PROBLEMS")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="targets synthesized/verified in parallel (default: the demo's)")
    parser.add_argument("--fresh-builds", action="store_true",
                        help="kernelbench: no extension build from the cache (a new nonce per run)")
    args = parser.parse_args()
    if args.cold and not os.environ.get("BENCH_CAMPAIGN_CHILD"):
        home = tempfile.mkdtemp(prefix="bench-campaign-home-")
        argv = [a for a in sys.argv[1:] if a != "--cold"]
        env = {**os.environ, "HOME": home, "BENCH_CAMPAIGN_CHILD": "1"}
        raise SystemExit(subprocess.call([sys.executable, __file__, *argv], env=env))
    for n in range(args.runs):
        if args.fresh_builds:
            _fresh_builds()
        row = run(args.workload, args.budget, args.tasks, args.seed, args.public,
                  args.concurrency)
        row.update(label=args.label, cold=bool(os.environ.get("BENCH_CAMPAIGN_CHILD")) and n == 0,
                   run=n + 1, fresh_builds=args.fresh_builds)
        if args.json:
            print(json.dumps(row))
            continue
        for key, value in row.items():
            print(f"{key:20s} {value}")


if __name__ == "__main__":
    main()
