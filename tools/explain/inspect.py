"""The Inspector's read-only tools over a state folder: plain typed functions whose docstring
is their description for the model. Each returns JSON text with a ``sources`` list, the
record ids an answer built on it must cite."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from structcover.tools.explain.state import StateView


def inspector_tools(view: StateView) -> list[Callable[..., str]]:
    """The tools bound to one opened state folder."""

    def explain_bin(bin: str, task: str = "") -> str:  # noqa: A002 - the user's word
        """Evidence for why a bin is empty or thin: never targeted, failed attempts by stage
        with examples, proven infeasible and why, nearest programs and what separates them.

        Args:
            bin: The bin as axis=level items, e.g. "reuse=smem_tiling,global_access=strided".
            task: Only this task (empty for every task).
        """
        from structcover.tools.explain.evidence import explain_bin as explain

        return _dump(explain(view, bin, task or None))

    def list_tasks() -> str:
        """The tasks the campaign's memory knows, with their verified program counts."""
        tasks = view.tasks()
        return json.dumps({"tasks": {t: len(view.programs(t)) for t in tasks},
                           "sources": [f"task:{t}" for t in tasks]})

    def list_axes() -> str:
        """The archive's axes and their levels (what a bin may be written with)."""
        from structcover.tools.explain.binspec import axis_levels, short_axis

        axes = {short_axis(a): v for a, v in axis_levels(view.archive).items()}
        return json.dumps({"axes": axes, "sources": ["archive.json"]})

    def gap_history(task: str, bin: str) -> str:  # noqa: A002
        """Every recorded attempt on one exact bin of one task, oldest first, and its status.

        Args:
            task: The task id, e.g. "saxpy".
            bin: The full bin label or axis=level items naming exactly one bin.
        """
        from structcover.tools.explain.binspec import parse_spec

        spec = parse_spec(bin, view.archive)
        if not spec.exact:
            return json.dumps({"error": f"{bin!r} names {len(spec.bins)} bins; use "
                                        "explain_bin for a region", "sources": []})
        h = view.store.gap_history(task, spec.bins[0]) if view.store is not None else None
        if h is None:
            return json.dumps({"error": "no memory in this state folder", "sources": []})
        return json.dumps({"status": h.status, "attempts": [a.model_dump(mode="json")
                                                            for a in h.attempts],
                           "proof": h.proof.model_dump(mode="json") if h.proof else None,
                           "sources": [f"gap:{task}|{spec.bins[0]}"]})

    def why_program(program: str) -> str:
        """Why one program is predicted fast or slow, from its structural features.

        Args:
            program: A program id (or a unique prefix) from memory.
        """
        from structcover.tools.explain.why import explain_program

        return _dump(explain_program(view, program))

    return [explain_bin, list_tasks, list_axes, gap_history, why_program]


def _dump(model: Any) -> str:
    data = model.model_dump(mode="json")
    sources = list(data.get("sources", []))
    for t in data.get("tasks", []):
        sources += t.get("sources", [])
    data["sources"] = list(dict.fromkeys(sources))
    return json.dumps(data)


def run_tool(tools: list[Callable[..., str]], name: str, args: dict[str, Any]
             ) -> tuple[str, list[str]]:
    """Call tool ``name`` with ``args``; the JSON text and its sources. A bad call comes
    back as an error text (the model sees it and may try again), never an exception."""
    fn = next((t for t in tools if t.__name__ == name), None)
    if fn is None:
        return json.dumps({"error": f"no tool {name!r}"}), []
    try:
        text = fn(**args)
    except (TypeError, ValueError, KeyError) as exc:
        return json.dumps({"error": f"{name}: {exc}"}), []
    try:
        sources = list(json.loads(text).get("sources", []))
    except ValueError:
        sources = []
    return text, sources
