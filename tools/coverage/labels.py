"""Bin labels: how an archive names a bin, and the one parser of those names.

A grid bin is ``f1=v1,f2=[lo,hi)``: one ``feature=level`` item per axis, in axis order, where a
level is a category (which never holds ``,``, ``=`` or ``|``; see ``Dimension``) or a numeric
range ``[lo,hi)`` / ``[lo,hi]``. A CVT cell is ``cell=K|`` followed by the same items (each
feature's extent within the cell). Archives write labels with :func:`join_label` and
:func:`cell_label`; everything that reads one (the grid's coordinates, a prompt's constraints
without an archive, the report's columns) goes through :func:`label_items`.
"""

from __future__ import annotations

from collections.abc import Iterable

from structcover.tools.coverage.bins import Bound

#: What starts a CVT cell's label.
CELL_PREFIX = "cell="


def join_label(items: Iterable[tuple[str, str]]) -> str:
    """``[(f1, v1), (f2, v2)]`` -> ``"f1=v1,f2=v2"``."""
    return ",".join(f"{name}={level}" for name, level in items)


def cell_label(cell: int, items: Iterable[tuple[str, str]]) -> str:
    """The label of CVT cell ``cell``: ``cell=K|f1=v1,...``."""
    return f"{CELL_PREFIX}{cell}|{join_label(items)}"


def split_cell(label: str) -> tuple[int | None, str]:
    """``"cell=3|f=v"`` -> ``(3, "f=v")``; a grid label -> ``(None, label)``.

    Raises:
        ValueError: A ``cell=`` label whose cell number is not an integer.
    """
    if not (label.startswith(CELL_PREFIX) and "|" in label):
        return None, label
    head, rest = label.split("|", 1)
    try:
        return int(head[len(CELL_PREFIX):]), rest
    except ValueError as exc:
        raise ValueError(f"bin label {label!r}: {head!r} is not 'cell=<number>'") from exc


def label_items(label: str) -> list[tuple[str, str]]:
    """The ``(feature, level)`` items of a label, in order (a CVT prefix is skipped).

    A level that opens with ``[`` or ``(`` runs to the bracket that closes it (ranges hold a
    comma); any other level runs to the next comma. Space around names and levels is dropped.

    Raises:
        ValueError: An item without ``=``, an empty name, or a label with no item.
    """
    _, text = split_cell(label)
    items: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        eq = text.find("=", pos)
        name = text[pos:eq].strip() if eq >= 0 else ""
        if not name or "," in name:
            raise ValueError(f"bin label {label!r}: cannot parse near {text[pos:]!r} "
                             "(expected feature=level)")
        start = eq + 1 + len(text[eq + 1:]) - len(text[eq + 1:].lstrip())
        end = _range_end(text, start)
        if end < 0:  # a bare level (or an unclosed bracket) runs to the next comma
            comma = text.find(",", start)
            end = comma if comma >= 0 else len(text)
        items.append((name, text[start:end].strip()))
        comma = text.find(",", end)
        pos = comma + 1 if comma >= 0 else len(text)
    if not items:
        raise ValueError(f"bin label {label!r}: no feature=level items")
    return items


def _range_end(text: str, start: int) -> int:
    """End (exclusive) of a range level opening at ``start``, or -1 when none opens there: the
    first closing bracket, when only space separates it from the next item or the end."""
    if text[start:start + 1] not in ("[", "("):
        return -1
    closes = [i for i in (text.find("]", start), text.find(")", start)) if i >= 0]
    if not closes:
        return -1
    end = min(closes) + 1
    return end if text[end:].lstrip()[:1] in ("", ",") else -1


def parse_bin_label(label: str) -> dict[str, Bound]:
    """Per-feature bounds of a label, without its archive (a prompt for a named bin).

    ``[a,b]`` is closed, ``[a,b)`` half-open (``?``, ``inf``, ``-inf`` or nothing: open end); a
    bare level is a categorical value. With the archive at hand, ``Archive.describe_bin`` gives
    the exact bounds instead.

    Raises:
        ValueError: The label has no ``feature=level`` items or a malformed range.
    """
    bounds: dict[str, Bound] = {}
    for name, raw in label_items(label):
        if raw[:1] in ("[", "("):
            parts = raw[1:-1].split(",")
            if len(parts) != 2:
                raise ValueError(f"bin label {label!r}: range {raw!r} needs two ends")
            try:
                lo, hi = (None if p.strip() in ("", "?", "-inf", "inf") else float(p)
                          for p in parts)
            except ValueError as exc:
                raise ValueError(f"bin label {label!r}: range {raw!r}: {exc}") from exc
            bounds[name] = Bound(feature=name, low=lo, high=hi, high_closed=raw[-1] == "]")
        elif not raw:
            raise ValueError(f"bin label {label!r}: {name} has no level")
        else:
            bounds[name] = Bound(feature=name, value=raw)
    return bounds
