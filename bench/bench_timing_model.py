"""Timing model on the demo: cost, agreement with the old analytic model, and discovery.

Three figures, all on the sample corpus (every program on each of its family's tasks):

* ``cost``: wall seconds of ``simulate`` (3 rounds, the demo's settings) with modelled rewards
  (packaged profile cache; an empty user cache) and with the analytic roofline, each in a
  fresh process;
* ``agreement``: per task, Spearman's rank correlation between the timing model's times and
  the analytic model's (``gpu_model``, over static features) of the task's corpus programs,
  and the median over tasks; the per-GPU spread of the modelled times (H100 vs the others);
* ``discovery``: the demo's three rounds of discovery (``run_diagnosis``, the demo's bootstrap)
  on modelled and on analytic rewards: F* per round and its overlap.

Usage: ``python bench/bench_timing_model.py [--json]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

_COST = """
import time, tempfile
from pathlib import Path
t0 = time.perf_counter()
from structcover.tools.simulation.simulate import simulate, SimulationSettings
from structcover.tools.simulation.profiles import ProfileStore
kw = {{}} if "{mode}" == "analytic" else {{"store": ProfileStore(user=Path(tempfile.mkdtemp()))}}
t1 = time.perf_counter()
simulate(SimulationSettings(rounds=3, collapse=0.6, seed=0), rewards="{mode}", **kw)
print(round(t1 - t0, 2), round(time.perf_counter() - t1, 2))
"""


def cost() -> dict[str, dict[str, float]]:
    """Import and simulate seconds per reward mode, each in a fresh process."""
    out = {}
    for mode in ("analytic", "modelled"):
        text = subprocess.run([sys.executable, "-c", _COST.format(mode=mode)], check=True,
                              capture_output=True, text=True).stdout.split()
        out[mode] = {"import_s": float(text[0]), "simulate_s": float(text[1])}
    return out


def agreement() -> dict[str, object]:
    """Spearman rho per task between modelled and analytic times; per-GPU medians."""
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.simulation.gpu_model import predict_time_s, workload
    from structcover.tools.simulation.gpu_specs import GPUS
    from structcover.tools.simulation.modelled import program_time
    from structcover.tools.simulation.profiles import ProfileStore
    from structcover.tools.simulation.simulate import _features

    store = ProfileStore(user=None)
    rhos: dict[str, float] = {}
    per_gpu: dict[str, list[float]] = {g: [] for g in GPUS}
    for fam in load_corpus():
        for spec in fam.tasks:
            entries = [store.get(p.source, spec) for p in fam.programs]
            modelled = [program_time(e, spec, GPUS["h100-sxm"]).seconds for e in entries]
            analytic = [predict_time_s(_features(p.source), workload(spec))
                        for p in fam.programs]
            rhos[spec.task_id] = round(float(spearmanr(modelled, analytic).statistic), 3)
            for g, gpu in GPUS.items():
                per_gpu[g] += [program_time(e, spec, gpu).seconds for e in entries]
    h100 = np.array(per_gpu["h100-sxm"])
    return {"spearman_per_task": rhos,
            "spearman_median": round(float(np.median(list(rhos.values()))), 3),
            "median_time_ratio_to_h100": {g: round(float(np.median(np.array(v) / h100)), 2)
                                          for g, v in per_gpu.items()}}


def discovery() -> dict[str, object]:
    """F* per round of the demo's discovery on modelled vs analytic rewards."""
    from structcover.config import load_settings
    from structcover.demo import DEMO_BOOTSTRAP
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.simulation.simulate import SimulationSettings, simulate

    settings = load_settings()
    disc = settings.discovery.model_copy(update={"bootstrap": DEMO_BOOTSTRAP})
    out: dict[str, object] = {}
    for mode in ("modelled", "analytic"):
        table = simulate(SimulationSettings(rounds=3, collapse=0.6, seed=0), rewards=mode)
        state = Path(tempfile.mkdtemp()) / "state"
        rounds = []
        for n in range(3):
            run = run_diagnosis(table[table["round"] == n], state, round=n,
                                settings=settings.archive, discovery_settings=disc, seed=0)
            d = run.diagnosis
            rounds.append({"f_star": [f.name for f in d.features if f.selected],
                           "archive": list(d.archive_features), "scov": round(d.scov, 3),
                           "collapse": d.collapse.kind if d.collapse.detected else "none"})
        out[mode] = rounds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = {"cost": cost(), "agreement": agreement(), "discovery": discovery()}
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
