"""ncu's CSV (``--csv --page raw``, or the long form of an exported report) into plain dicts,
one per kernel launch; split from ``ncu_metrics.py`` (which maps them onto our counters).

State: tested against hand-made CSV only; it has not read a real GPU's ncu output yet.
"""

from __future__ import annotations

import csv
import math
import re
from typing import Any

from structcover.tools.verify.ncu_metrics import base_name

#: ncu prints its own messages with these prefixes, on stdout when there is no log file.
_NCU_MESSAGE = re.compile(r"^==(PROF|WARNING|ERROR|WARN)==")
#: Columns of ncu's CSV that describe the launch rather than hold a metric.
_IDENTITY_COLUMNS = frozenset({
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context",
    "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name", "Function Name"})
#: Unit prefixes, for output printed without ``--print-units base`` (decimal K/M/G, binary Ki).
_UNIT_PREFIX = {"Ki": 1024.0, "Mi": 1024.0 ** 2, "Gi": 1024.0 ** 3, "K": 1e3, "M": 1e6,
                "G": 1e9, "T": 1e12}


def _csv_lines(text: str) -> list[str]:
    """The CSV part of ncu's output: from the header row on, ncu's own messages removed."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not _NCU_MESSAGE.match(ln)]
    for i, line in enumerate(lines):
        if line.startswith('"ID"') or line.startswith("ID,"):
            return lines[i:]
    return []


def _scale(unit: str) -> float:
    """Factor from a printed unit to its base unit (1 for base units such as ``sector``)."""
    for prefix in ("Ki", "Mi", "Gi", "K", "M", "G", "T"):
        rest = unit[len(prefix):]
        # A prefix counts only before a lowercase unit name ("Kbyte", "Msector"), never in
        # a base unit itself.
        if unit.startswith(prefix) and rest[:1].islower():
            return _UNIT_PREFIX[prefix]
    return 1.0


def parse_value(text: str, unit: str = "") -> float | None:
    """A metric value as a float: thousands separators removed, ``n/a`` and blanks as None."""
    cleaned = text.strip().replace(",", "")
    if not cleaned or cleaned.lower() in ("n/a", "nan", "-"):
        return None
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value * _scale(unit) if math.isfinite(value) else None


def _launch(ident: str, kernel: str, info: dict[str, str]) -> dict[str, Any]:
    return {"id": int(ident) if ident.strip().isdigit() else ident, "kernel": kernel,
            "kernel_base": base_name(kernel), "metrics": {}, "units": {}, "info": info}


def _parse_wide(header: list[str], rows: list[list[str]]) -> list[dict[str, Any]]:
    """``--page raw``: one row per launch, one column per metric, a units row after the header."""
    units: dict[str, str] = {}
    launches = []
    for row in rows:
        cells = dict(zip(header, row, strict=False))
        if not cells.get("ID", "").strip():
            # The units row (its identity cells are empty): remember each column's unit.
            units.update({k: v for k, v in cells.items() if k not in _IDENTITY_COLUMNS})
            continue
        info = {k: v for k, v in cells.items() if k in _IDENTITY_COLUMNS}
        launch = _launch(cells["ID"], cells.get("Kernel Name", ""), info)
        for name, raw in cells.items():
            if name in _IDENTITY_COLUMNS:
                continue
            value = parse_value(raw, units.get(name, ""))
            if value is not None:
                launch["metrics"][name] = value
                launch["units"][name] = units.get(name, "")
        launches.append(launch)
    return launches


def _parse_long(header: list[str], rows: list[list[str]]) -> list[dict[str, Any]]:
    """``--page details``: one row per (launch, metric); grouped back into launches."""
    by_id: dict[str, dict[str, Any]] = {}
    for row in rows:
        cells = dict(zip(header, row, strict=False))
        ident = cells.get("ID", "").strip()
        if not ident:
            continue
        if ident not in by_id:
            info = {k: v for k, v in cells.items()
                    if k in _IDENTITY_COLUMNS and k != "Section Name"}
            by_id[ident] = _launch(ident, cells.get("Kernel Name", ""), info)
        unit = cells.get("Metric Unit", "")
        value = parse_value(cells.get("Metric Value", ""), unit)
        if value is not None:
            by_id[ident]["metrics"][cells["Metric Name"]] = value
            by_id[ident]["units"][cells["Metric Name"]] = unit
    return list(by_id.values())


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """ncu's CSV output as one dict per kernel launch, in launch order.

    Reads ``--page raw`` (a header row, a units row, one row per launch) and, for a report
    exported with the default page, the long form (``Metric Name``/``Metric Value`` rows).
    Lines before the header and ncu's ``==PROF==`` messages are skipped.

    Returns:
        ``{"id", "kernel", "kernel_base", "metrics": {name: value}, "units": {name: unit},
        "info": {identity column: text}}`` per launch; a metric printed as ``n/a`` is absent.
    """
    lines = _csv_lines(text)
    if not lines:
        return []
    header, *rows = list(csv.reader(lines))
    if "Metric Name" in header and "Metric Value" in header:
        return _parse_long(header, rows)
    return _parse_wide(header, rows)
