"""Rollout simulator for demos and tests. Every reward it makes is SIMULATED.

Each round, a policy writes ``rollouts_per_task`` programs per task of the sample corpus by
picking among the task's programs (reference and variants) and, with probability
``mutate_p``, taking a real variant of it made by the launch-config mutation operator
(``tools.mutations.launch_config.block_size``: halves or doubles the block size, keeping the
launcher and kernel consistent, compile-checked). The variant's features are extracted from
its own source, so a row's features always describe its ``program``; where the operator does
not apply, the program is used unmutated. Operator results and features are cached per
content hash, so each unique program is mutated and extracted once per process.
The policy's structural distribution collapses over rounds by a controllable amount ``c``:

    p_t = (1 − a_t) · uniform + a_t · uniform over the target set,  a_t = 1 − (1 − c)^t

The target set is the task's fastest program (whole-program collapse, as RL tends to do) or,
with ``collapse_feature``, the programs sharing that feature's most common value across the
whole corpus (one value for every task, as a policy that drops a structure everywhere does;
per-task modes could pull tasks in opposite directions and leave the pooled distribution
unchanged). Tasks without any program of that value do not collapse.

Rewards (``rewards="modelled"``, the default) come from the timing model
(:mod:`timing_model` via :mod:`modelled`) over each program's OWN measured CPU-emulator
counters (:mod:`profiles`: packaged cache of the corpus and its mutants, else profiled now),
``reward_source = "modelled"``; the structure discovery later finds is not an input to them.
A program whose profile fails is never drawn (a mutant falls back to its parent), and the
reason is kept in ``table.attrs["unprofiled"]``. ``rewards="analytic"`` keeps the old
roofline over static features (:mod:`gpu_model`, ``"simulated"``), for comparison only. A
measured timing for a program always wins (``"measured-gpu"``). Log-normal noise
(``noise_sigma``) stands for run-to-run variation in both modelled modes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from structcover.schema import TaskSpec, content_hash
from structcover.tools.data.corpus import TaskFamily, load_corpus
from structcover.tools.simulation.gpu_model import GpuSpec, predict_time_s, workload
from structcover.tools.simulation.gpu_specs import DEFAULT_GPU

if TYPE_CHECKING:
    from structcover.tools.simulation.profiles import ProfileStore

#: Reward sources :func:`simulate` can draw from.
REWARDS = ("modelled", "analytic")


@dataclass(frozen=True)
class SimulationSettings:
    """Knobs of the simulator (all seeded through ``seed``)."""

    rounds: int = 3
    rollouts_per_task: int = 64
    collapse: float = 0.5
    collapse_feature: str | None = None
    mutate_p: float = 0.3
    p_incorrect: float = 0.1
    noise_sigma: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.rollouts_per_task < 1:
            raise ValueError("rounds and rollouts_per_task must be >= 1")
        for name in ("collapse", "mutate_p", "p_incorrect"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.noise_sigma < 0:
            raise ValueError("noise_sigma must be >= 0")


def load_measurements(path: Path | None) -> dict[str, float]:
    """Measured run times (ms) by program id from a JSON ``{id: ms}`` or a CSV/Parquet file
    with ``program_id`` and ``runtime_ms`` columns; empty without a path."""
    if path is None:
        return {}
    path = Path(path)
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        return {str(k): float(v) for k, v in data.items()}
    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    if not {"program_id", "runtime_ms"} <= set(frame.columns):
        raise ValueError(f"{path}: needs program_id and runtime_ms columns")
    return dict(zip(frame["program_id"].astype(str), frame["runtime_ms"].astype(float),
                    strict=True))


_FEATURES: dict[str, dict] = {}
_VARIANTS: dict[str, list[tuple[str, str]]] = {}


def _features(source: str) -> dict:
    """Features of ``source``, extracted once per unique program."""
    key = content_hash(source)
    if key not in _FEATURES:
        from structcover.tools.features.extract import extract_features  # heavy: tree-sitter

        _FEATURES[key] = dict(extract_features(source).values)
    return _FEATURES[key]


def _variants(source: str) -> list[tuple[str, str]]:
    """Launch-config variants of ``source`` as (source, "operator k=v"), once per program.

    Empty where the operator does not apply (no constant block size it can edit
    consistently, or no candidate compiled) or the mutation package is unavailable.
    """
    key = content_hash(source)
    if key not in _VARIANTS:
        try:
            from structcover.tools.mutations.launch_config import block_size  # noqa: PLC0415
        except ImportError:
            _VARIANTS[key] = []
            return []
        result = block_size(source)
        _VARIANTS[key] = [(v.source, f"launch_config.{v.operator} "
                           + " ".join(f"{k}={p}" for k, p in sorted(v.params.items())))
                          for v in result.variants]
    return _VARIANTS[key]


#: Programs mutated at once by :func:`_prefetch_variants` (each waits on sandboxed compiles).
PREFETCH_THREADS = 2


def _prefetch_variants(sources: list[str]) -> None:
    """Make every program's launch-config variants ahead of the draws, a few at a time.

    The draws below ask for nearly every program's variants (a quarter or more of ~200
    rollouts per task are mutated), and each variant is compile-checked in a sandboxed child,
    so doing them in parallel keeps the cores busy instead of waiting on one compile at a
    time. Results are the same: :func:`_variants` is a pure function of the program.
    """
    from concurrent.futures import ThreadPoolExecutor

    todo = list({content_hash(s): s for s in sources if content_hash(s) not in _VARIANTS}
                .values())
    if len(todo) > 1:
        with ThreadPoolExecutor(max_workers=PREFETCH_THREADS) as pool:
            list(pool.map(_variants, todo))


def simulate(settings: SimulationSettings = SimulationSettings(), *,
             families: list[TaskFamily] | None = None, measured: dict[str, float] | None = None,
             gpu: GpuSpec = GpuSpec(), rewards: str = "modelled",  # noqa: B008 - frozen
             gpu_name: str = DEFAULT_GPU, store: ProfileStore | None = None) -> pd.DataFrame:
    """Simulate ``settings.rounds`` rounds of rollouts; one feature-table row per rollout.

    Columns: ``program_id``, ``task_id``, ``round``, ``correct``, ``speedup``, ``runtime_ms``,
    ``reward_source``, ``program``, ``family``, ``variant``, ``origin`` (``corpus`` or
    ``mutated``), ``mutation`` (operator and parameters, empty when not mutated) and every
    feature (extracted from ``program`` itself). ``table.attrs``: ``rewards`` (where the
    rewards come from, in words), ``unprofiled`` (program -> why it has no modelled time)
    and ``profiles`` (how many profiles came from the packaged cache, the user cache, a run
    now, and how many an older profiler measured).

    Args:
        settings: The simulator's knobs.
        families: Corpus families (the sample corpus by default).
        measured: Measured run times (ms) by program id; they win over any model.
        gpu: The analytic model's GPU (``rewards="analytic"`` only).
        rewards: ``modelled`` (timing model over measured counters) or ``analytic``.
        gpu_name: The timing model's GPU (a key of ``gpu_specs.GPUS``).
        store: A ``profiles.ProfileStore`` (the packaged + user caches by default).

    Raises:
        ValueError: The corpus is empty, ``collapse_feature`` is not a feature, ``rewards`` or
            ``gpu_name`` is unknown, or no program of a task could be profiled.
    """
    if rewards not in REWARDS:
        raise ValueError(f"rewards must be one of {REWARDS}, got {rewards!r}")
    families = load_corpus() if families is None else families
    if not families:
        raise ValueError("simulate: the corpus has no task families")
    measured = measured or {}
    rng = np.random.default_rng(settings.seed)
    rows = []
    all_feats = {fam.name: [_features(p.source) for p in fam.programs] for fam in families}
    if settings.mutate_p > 0:
        _prefetch_variants([p.source for fam in families for p in fam.programs])
    mode = _corpus_mode(settings.collapse_feature, all_feats)
    if rewards == "modelled":
        timer = _ModelledTimes(families, settings.mutate_p > 0, gpu_name, store)
        attrs = timer.attrs()
    else:
        attrs = {"rewards": "simulated: analytic roofline over static features "
                            "(tools/simulation/gpu_model.py)", "unprofiled": {}, "profiles": {}}
    for fam in families:
        progs = fam.programs
        feats = all_feats[fam.name]
        for spec in fam.tasks:
            if rewards == "modelled":
                times = np.array([timer.seconds(p.source, spec) for p in progs])
                usable = np.isfinite(times)
                if not usable.any():
                    raise ValueError(f"simulate: no program of task {spec.task_id} could be "
                                     f"profiled: {attrs['unprofiled']}")
                ref_s = (times[0] if usable[0] else float(np.median(times[usable])))
                src_label = "modelled"
            else:
                work = workload(spec)
                times = np.array([predict_time_s(f, work, gpu) for f in feats])
                usable = np.ones(len(progs), dtype=bool)
                ref_s, src_label = float(times[0]), "simulated"
            target = _target_set(settings.collapse_feature, mode, feats,
                                 np.where(usable, times, np.inf)) * usable
            if not target.any():
                target = usable.astype(float)
            base = usable / usable.sum()
            for rnd in range(settings.rounds):
                a = 1.0 - (1.0 - settings.collapse) ** rnd
                p = (1 - a) * base + a * target / target.sum()
                picks = rng.choice(len(progs), size=settings.rollouts_per_task, p=p)
                for j in picks:
                    values, source, mutation, secs = feats[j], progs[j].source, "", times[j]
                    if rng.random() < settings.mutate_p:
                        options = _variants(source)
                        k = int(rng.integers(0, 2))  # drawn always, so seeds stay comparable
                        if options:
                            cand, how = options[k % len(options)]
                            cand_s = (timer.seconds(cand, spec) if rewards == "modelled"
                                      else predict_time_s(_features(cand), workload(spec), gpu))
                            if np.isfinite(cand_s):  # an unprofiled mutant: keep the parent
                                source, mutation, secs = cand, how, cand_s
                                values = _features(source)
                    pid = content_hash(source)
                    noise = float(np.exp(rng.normal(0.0, settings.noise_sigma)))
                    if pid in measured:
                        ms, src = measured[pid], "measured-gpu"
                        ref_ms = measured.get(content_hash(fam.reference.source), ref_s * 1e3)
                    else:
                        ms, src, ref_ms = float(secs) * 1e3 * noise, src_label, ref_s * 1e3
                    rows.append({"program_id": pid, "task_id": spec.task_id, "round": rnd,
                                 "correct": bool(rng.random() >= settings.p_incorrect),
                                 "speedup": ref_ms / ms, "runtime_ms": ms,
                                 "reward_source": src, "program": source, "family": fam.name,
                                 "variant": progs[j].name,
                                 "origin": "mutated" if mutation else "corpus",
                                 "mutation": mutation, **values})
    table = pd.DataFrame(rows)
    if rewards == "modelled":
        attrs = timer.attrs()  # with the profiles every draw asked for
    table.attrs.update(attrs)
    return table


class _ModelledTimes:
    """Modelled seconds per (program, task) from measured profiles; NaN where unprofiled."""

    def __init__(self, families: list[TaskFamily], with_variants: bool, gpu_name: str,
                 store: ProfileStore | None) -> None:
        from structcover.tools.simulation.gpu_specs import gpu_spec
        from structcover.tools.simulation.profiles import ProfileStore

        self.gpu = gpu_spec(gpu_name)
        self.store = store if store is not None else ProfileStore()
        self.unprofiled: dict[str, str] = {}
        self._cache: dict[tuple[str, str], float] = {}
        jobs = []
        for fam in families:
            sources = [p.source for p in fam.programs]
            if with_variants:
                sources += [v for s in list(sources) for v, _ in _variants(s)]
            jobs += [(s, spec) for spec in fam.tasks for s in dict.fromkeys(sources)]
        self.store.get_many(jobs)

    def seconds(self, source: str, spec: TaskSpec) -> float:
        from structcover.tools.simulation.modelled import NoProfile, program_time

        key = (content_hash(source), spec.task_id)
        if key not in self._cache:
            entry = self.store.get(source, spec)
            try:
                self._cache[key] = program_time(entry, spec, self.gpu).seconds
            except NoProfile as exc:
                self._cache[key] = float("nan")
                self.unprofiled[f"{key[1]}/{key[0]}"] = str(exc)
        return self._cache[key]

    def attrs(self) -> dict[str, Any]:
        from collections import Counter

        from structcover.tools.simulation.modelled import reward_label

        origins = Counter(self.store.origin.values())
        return {"rewards": reward_label(self.gpu), "unprofiled": dict(self.unprofiled),
                "profiles": {**{k: int(v) for k, v in origins.items()},
                             "stale": int(self.store.stale())}}


def _corpus_mode(feature: str | None, feats: dict[str, list[dict]]) -> str | None:
    """Most common value of ``feature`` over every corpus program (None without a feature).

    Raises:
        ValueError: ``feature`` is not a feature of the corpus.
    """
    if feature is None:
        return None
    vals = [str(f.get(feature)) for fam in feats.values() for f in fam if feature in f]
    if not vals:
        raise ValueError(f"collapse_feature {feature!r} is not a feature of the corpus")
    return max(sorted(set(vals)), key=vals.count)


def _target_set(feature: str | None, mode: str | None, feats: list[dict],
                times: np.ndarray) -> np.ndarray:
    """Indicator of the programs the policy collapses onto (all of them = no collapse)."""
    if feature is None:
        out = np.zeros(len(feats))
        out[int(np.argmin(times))] = 1.0
        return out
    out = np.array([1.0 if str(f.get(feature)) == mode else 0.0 for f in feats])
    return out if out.any() else np.ones(len(feats))
