"""The round's outputs after a campaign: curated data (with the new programs), the
constrained prompts for the gaps left open, contrast pairs, the new programs as ``.cu``
files (``.py`` for KernelBench candidates) with their provenance, and the HTML report.

Everything is written through the existing tools (``tools.curation``, ``tools.report``);
files are sorted and seeded so two runs with one seed write identical bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from structcover.campaign.toolbox import origin_of
from structcover.graphs.state import CampaignState

if TYPE_CHECKING:
    from structcover.campaign import CampaignOptions
    from structcover.campaign.prepare import Prepared


def output_dir(prep: Prepared, options: CampaignOptions) -> Path:
    """``options.output_dir`` or ``<state>/campaign/round_<N>``."""
    return Path(options.output_dir) if options.output_dir else (
        prep.state_dir / "campaign" / f"round_{prep.round}")


def added_rows(state: CampaignState, columns: list[str], round: int) -> pd.DataFrame:
    """The campaign's new programs as data rows (features from their verification)."""
    rows = []
    for p in sorted(state.get("added", []), key=lambda p: (p["task"], p["bin"])):
        row: dict[str, Any] = {c: np.nan for c in columns}
        row.update({k: v for k, v in p["features"].items() if k in columns})
        row.update(task_id=p["task"], program=p["source"], program_id=p["program_id"],
                   round=round, correct=True, origin=origin_of(p),
                   mutation="+".join(p["operators"]))
        rows.append(row)
    return pd.DataFrame(rows, columns=list(dict.fromkeys([*columns, "origin", "mutation"])))


def exporter(prep: Prepared, options: CampaignOptions) -> Callable[[CampaignState], dict[str, str]]:
    """The export node's callable for this campaign."""

    def export(state: CampaignState) -> dict[str, str]:
        from structcover.tools.curation.contrast import contrast_pairs, export_pairs
        from structcover.tools.curation.sampling import export_curation
        from structcover.tools.data.atomic import write_text
        from structcover.tools.kernelbench.for_bin import kernelbench_only
        from structcover.tools.mutations._triton import is_triton_program
        from structcover.tools.mutations.embedded import is_kernelbench_candidate
        from structcover.tools.report.campaign_panel import panel_from_state
        from structcover.tools.report.html_report import write_report

        out = output_dir(prep, options)
        run = prep.run
        new = added_rows(state, list(prep.table.columns), prep.round)
        table = pd.concat([prep.table, new], ignore_index=True) if len(new) else prep.table
        open_bins = {g["bin"] for g in state.get("gaps", []) if g["status"] != "filled"}
        gaps = [g for g in run.diagnosis.gaps if g.bin in open_bins]
        curated = export_curation(table, run.archive, out / "curated", gaps=gaps,
                                  diagnosis_json=run.diagnosis.to_json(), seed=options.seed,
                                  specs=kernelbench_only(getattr(prep.context.tools.verify,
                                                                 "specs", None)))
        files = {f"curated_{k}": v for k, v in curated.files.items()}
        records = []
        for p in sorted(state.get("added", []), key=lambda p: (p["task"], p["bin"])):
            # A KernelBench mutant (load_inline CUDA or Triton) is a whole Python candidate.
            python = is_kernelbench_candidate(p["source"]) or is_triton_program(p["source"])
            suffix = ".py" if python else ".cu"
            path = write_text(p["source"],
                              out / "programs" / p["task"] / f"{p['program_id']}{suffix}")
            records.append({k: p[k] for k in ("program_id", "task", "bin", "parent_id",
                                              "operators", "backend", "checks")}
                           | {"origin": origin_of(p), "path": str(path.relative_to(out))})
        files["added_programs"] = str(write_text(
            "".join(json.dumps(r, sort_keys=True) + "\n" for r in records),
            out / "added_programs.jsonl"))
        pairs = contrast_pairs(_trajectories(prep.table), features=_features(prep.table))
        files["contrast_pairs"] = str(export_pairs(pairs, out / "contrast_pairs.jsonl"))
        panel = panel_from_state(dict(state), languages=_languages(prep.table),
                                 added_languages=_languages(new), origin=origin_of)
        files["report"] = str(write_report(out / "report.html", run.diagnosis,
                                           archive=run.archive, table=table,
                                           history=run.history, simulated=run.simulated,
                                           reward_source=run.reward_source,
                                           campaign=panel))
        if prep.llm is not None:  # usage and fallbacks of the LLM policies, with the report
            from structcover.agents.llm_report import export_llm

            files.update(export_llm(prep.llm.summary(), out, Path(files["report"])))
        return files

    return export


def _languages(rows: pd.DataFrame) -> Counter[str]:
    """Distinct programs per ``program.language`` (``unknown`` where it was not extracted)."""
    if not len(rows):
        return Counter()
    uniq = rows.drop_duplicates("program_id") if "program_id" in rows.columns else rows
    if "program.language" not in uniq.columns:
        return Counter({"unknown": len(uniq)})
    return Counter(str(v) if isinstance(v, str) else "unknown" for v in uniq["program.language"])


def _trajectories(rows: pd.DataFrame) -> list[Any]:
    from structcover.schema import Reward, Trajectory

    out = []
    uniq = rows.drop_duplicates("program_id").sort_values(["task_id", "program_id"])
    for _, r in uniq.iterrows():
        speed = r.get("speedup")
        out.append(Trajectory(task_id=str(r["task_id"]), program=str(r["program"]),
                              reward=Reward(correct=bool(r.get("correct", True)),
                                            speedup=None if pd.isna(speed) else float(speed))))
    return out


def _features(rows: pd.DataFrame) -> dict[str, dict[str, Any]]:
    from structcover.schema import content_hash

    feats = [c for c in rows.columns if isinstance(c, str) and "." in c]
    uniq = rows.drop_duplicates("program_id")
    return {content_hash(str(r["program"])): {f: r[f] for f in feats} for _, r in uniq.iterrows()}
