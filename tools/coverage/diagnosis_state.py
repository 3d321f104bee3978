"""Round-by-round diagnosis over a state folder: the frozen archive, discoveries, history.

State layout (shared with ``structcover discover``)::

    <state>/archive.json                 the frozen archive, created at the first round
    <state>/infeasible.json              optional list of InfeasibilityProof objects
    <state>/rounds/<N>/discovery.json    discovery of round N (written by discover or here)
    <state>/rounds/<N>/diagnosis.json    diagnosis of round N
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from structcover.config import ArchiveSettings, DiscoverySettings
from structcover.tools.coverage.archive import ARCHIVE_FILE, Archive, build_archive, load_archive
from structcover.tools.coverage.bins import reward_of
from structcover.tools.coverage.diagnosis import Diagnosis, diagnose
from structcover.tools.coverage.entropy import EntropyReport
from structcover.tools.coverage.feasibility import InfeasibilityProof
from structcover.tools.coverage.trend import build_trend
from structcover.tools.data.atomic import write_text
from structcover.tools.report.html_report import RoundPoint


@dataclass
class DiagnosisRun:
    """A diagnosed round with what produced it."""

    diagnosis: Diagnosis
    archive: Archive
    table: pd.DataFrame
    history: list[RoundPoint]
    simulated: bool
    notes: list[str] = field(default_factory=list)
    #: Where the rewards came from when they were not measured: "modelled" (the timing
    #: model over measured emulator counters) or "simulated" (the analytic model); "".
    reward_source: str = ""


def round_dir(state: Path, n: int) -> Path:
    """``<state>/rounds/<n>``."""
    return Path(state) / "rounds" / str(n)


def feature_columns(table: pd.DataFrame) -> list[str]:
    """Feature columns: names with a dot."""
    return [c for c in table.columns if isinstance(c, str) and "." in c]


def ensure_features(table: pd.DataFrame) -> pd.DataFrame:
    """Extract features from ``program`` when the table has none.

    Raises:
        ValueError: No feature columns and no ``program`` column.
    """
    if feature_columns(table):
        return table
    if "program" not in table.columns:
        raise ValueError("data has no feature columns (names with a dot) and no 'program' "
                         "column to extract them from")
    from structcover.schema import content_hash
    from structcover.tools.features.extract import extract_table  # lazy: tree-sitter

    table = table.copy()
    if "program_id" not in table.columns:
        table["program_id"] = table["program"].fillna("").astype(str).map(content_hash)
    uniq = table.drop_duplicates("program_id")
    feats = extract_table(list(zip(uniq["program_id"], uniq["program"].fillna("").astype(str),
                                   strict=True)),
                          workers=1)
    return table.merge(feats, on="program_id", how="left")


def pick_round(table: pd.DataFrame, round: int | None,
               notes: list[str]) -> tuple[int, pd.DataFrame]:
    """This round's number and rows: ``round`` if given, else the table's last round."""
    if "round" not in table.columns:
        return (round or 0), table
    rounds = sorted(pd.to_numeric(table["round"]).dropna().astype(int).unique())
    n = rounds[-1] if round is None else round
    if round is None and len(rounds) > 1:
        notes.append(f"data holds rounds {rounds}; diagnosing the last, {n} (use --round)")
    rows = table[pd.to_numeric(table["round"]) == n]
    if rows.empty:
        raise ValueError(f"data has no rows of round {n} (rounds present: {rounds})")
    return n, rows


def get_discovery(table: pd.DataFrame, state: Path, n: int, notes: list[str],
                  settings: DiscoverySettings | None = None) -> Any | None:
    """The saved discovery of round ``n``, else one computed now (and saved), else None."""
    path = round_dir(state, n) / "discovery.json"
    try:
        from structcover.tools.mining import discover, load_discovery, save_discovery
    except ImportError:
        notes.append("feature discovery is not available: using all supplied feature columns")
        return None
    if path.is_file():
        return load_discovery(path)
    s = settings or DiscoverySettings()
    try:
        found = discover(table, tau_high=s.tau_high, tau_low=s.tau_low, bootstrap=s.bootstrap,
                         min_gain=s.min_gain, critical_factor=s.critical_factor,
                         correct_only=s.correct_only, normalize_within_task=s.normalize_within_task,
                         seed=s.seed, round=n)
    except ValueError as exc:
        notes.append(f"discovery failed ({exc}): using all supplied feature columns")
        return None
    save_discovery(found, path)
    notes.append(f"no saved discovery for round {n}: discovered now and saved to {path}")
    return found


def archive_features(discovery: Any | None, table: pd.DataFrame, notes: list[str],
                     settings: ArchiveSettings | None = None) -> list[str]:
    """The archive's axes: by default the pattern features that discovery keeps.

    Pattern features (:data:`structcover.tools.coverage.axes.PATTERN_AXES`) are what users and
    prompts name, so their level combinations are the bins. Discovery keeps a pattern
    feature when it is in F* or above the marginal tier (its MI clears the within-task
    permutation null) and not confounded. At most ``settings.max_pattern_axes`` of them span
    the archive, highest within-task MI first (a note names the ones left out): each axis
    multiplies the bins every task must reach. When discovery keeps none, the first
    ``max_pattern_axes`` pattern features the table has span the archive (a note says so),
    since coverage of the pattern space is the question even where speed does not separate
    the levels. Without pattern features, the older rule applies: F*'s critical, structural,
    stable features (``settings.max_dims`` of them, best MI x stability first) on fixed edges;
    size and meta measures never span the archive.
    """
    from structcover.tools.coverage.axes import PATTERN_AXES  # noqa: PLC0415
    from structcover.tools.features.registry import is_structural  # noqa: PLC0415

    s = settings or ArchiveSettings()
    patterns = [f for f in PATTERN_AXES if f in table.columns and table[f].notna().any()]
    by = {f.name: f for f in discovery.features} if discovery is not None else {}
    if patterns:
        kept_by_discovery = set(discovery.f_star) if discovery is not None else set()
        kept = [f for f in patterns if f in by and (f in kept_by_discovery or (
            by[f].tier in ("critical", "moderate")
            and not getattr(by[f], "confounded", False)))]
        if kept:
            # Highest within-task MI first, ties in the documented axis order; capped so that
            # a task has tens of bins a campaign can fill, not thousands.
            kept.sort(key=lambda f: -(by[f].mi or 0.0))
            axes, capped = kept[:s.max_pattern_axes], kept[s.max_pattern_axes:]
            left = [f for f in patterns if f not in kept]
            notes.append(f"archive spans the pattern features discovery keeps, by MI: {axes}"
                         + (f"; kept but past max_pattern_axes={s.max_pattern_axes}: "
                            + ", ".join(f"{f} (MI {by[f].mi or 0.0:.3f})" for f in capped)
                            if capped else "")
                         + (f"; not kept: {left}" if left else ""))
            return axes
        axes = patterns[:s.max_pattern_axes]
        notes.append("discovery keeps no pattern feature"
                     + (" (no discovery)" if discovery is None else "")
                     + f": the archive spans the first {len(axes)} pattern features present, "
                       f"{axes} (of {patterns}; max_pattern_axes={s.max_pattern_axes})")
        return axes
    if discovery is not None:
        f_star = [f for f in discovery.f_star if f in table.columns and f in by]
        for tiers in (("critical",), ("critical", "moderate")):
            ok = [f for f in f_star if by[f].tier in tiers and is_structural(f)
                  and by[f].stability >= s.min_stability and _splits(table[f], s)]
            if ok:
                ok.sort(key=lambda f: -(by[f].mi or 0.0) * by[f].stability)
                dropped = [f for f in f_star if f not in ok[:s.max_dims]]
                if dropped:
                    notes.append(f"archive spans {ok[:s.max_dims]}; left out of it: "
                                 + ", ".join(f"{f} ({_why(by[f], s, ok, table)})" for f in dropped))
                return ok[:s.max_dims]
        splitting = [f for f in f_star if _splits(table[f], s)]
        if splitting:
            notes.append("no stable structural feature in F*: the archive spans F* "
                         f"(first {s.max_dims})")
            return splitting[:s.max_dims]
    cols = [c for c in feature_columns(table) if is_structural(c) and _splits(table[c], s)]
    notes.append(f"archive spans the first {s.max_dims} of {len(cols)} structural feature "
                 "columns with fixed bins (no usable F*)")
    return cols[:s.max_dims]


def _splits(values: pd.Series, s: ArchiveSettings) -> bool:
    """Whether the feature has fixed bins and round 0 fills at least two (else a dead axis)."""
    from structcover.tools.coverage.axes import fixed_dimension  # noqa: PLC0415

    dim = fixed_dimension(str(values.name), values)
    if dim is None:
        return False
    idx = dim.index(values)
    return len(set(idx[idx >= 0].tolist())) >= 2


def _why(f: Any, s: ArchiveSettings, ok: list[str], table: pd.DataFrame) -> str:
    from structcover.tools.features.registry import is_structural  # noqa: PLC0415

    if not is_structural(f.name):
        return "not structural"
    if f.stability < s.min_stability:
        return f"stability {f.stability:.2f} < {s.min_stability}"
    if f.name in table.columns and not _splits(table[f.name], s):
        return "one bin only"
    if f.name in ok:
        return f"past max_dims={s.max_dims}"
    return f"tier {f.tier}"


def _load_proofs(state: Path) -> list[InfeasibilityProof]:
    path = Path(state) / "infeasible.json"
    if not path.is_file():
        return []
    return [InfeasibilityProof.model_validate(p) for p in json.loads(path.read_text())]


def _reward_mean(rows: pd.DataFrame) -> float | None:
    """Mean R_perf of a round (None when the data carries no reward)."""
    try:
        values = reward_of(rows)
    except ValueError:
        return None
    return float(values.mean()) if len(values) else None


def _saved(state: Path, n: int) -> dict | None:
    path = round_dir(state, n) / "diagnosis.json"
    return json.loads(path.read_text()) if path.is_file() else None


def run_diagnosis(table: pd.DataFrame, state: Path, *, round: int | None = None,
                  settings: ArchiveSettings | None = None,
                  discovery_settings: DiscoverySettings | None = None,
                  seed: int = 0) -> DiagnosisRun:
    """Diagnose one round of ``table`` against the state's frozen archive (created if absent).

    Raises:
        ValueError: Bad data (no features, no such round, missing columns).
    """
    settings = settings or ArchiveSettings()
    state = Path(state)
    notes: list[str] = []
    table = ensure_features(table)
    n, rows = pick_round(table, round, notes)
    discovery = get_discovery(rows, state, n, notes, discovery_settings)
    archive = load_archive(state)
    if archive is None:
        archive = build_archive(rows, archive_features(discovery, rows, notes, settings),
                                settings=settings,
                                seed=seed, frozen_round=n)
        archive.empty_copy().save(state / ARCHIVE_FILE)
        notes.append(f"archive created and frozen at round {n}: {state / ARCHIVE_FILE}")
    prev_n = max((int(p.name) for p in (state / "rounds").glob("*")
                  if p.name.isdigit() and int(p.name) < n and _saved(state, int(p.name))),
                 default=None) if (state / "rounds").is_dir() else None
    prev = _saved(state, prev_n) if prev_n is not None else None
    d = diagnose(rows, archive, discovery=discovery, settings=settings, round=n, seed=seed,
                 previous_entropy=EntropyReport.model_validate(prev["entropy"]) if prev else None,
                 previous_round=prev_n, proofs=_load_proofs(state))
    d.notes = [*notes, *d.notes]
    d.reward_mean = _reward_mean(rows)
    write_text(d.to_json(), round_dir(state, n) / "diagnosis.json")
    d.trend = build_trend(state)  # after the write, so this round is in it
    history = []
    for p in sorted((state / "rounds").glob("*")):
        saved = _saved(state, int(p.name)) if p.name.isdigit() else None
        if saved:
            history.append(RoundPoint(round=int(p.name), scov=saved["scov"],
                                      entropy=saved["entropy"]["joint"]))
    sources = set(rows["reward_source"].astype(str)) if "reward_source" in rows.columns else set()
    source = next((s for s in ("simulated", "modelled") if s in sources), "")
    return DiagnosisRun(diagnosis=d, archive=archive, table=rows, history=history,
                        simulated=source == "simulated", notes=notes, reward_source=source)
