"""Target bins as per-axis levels: parse an archive's bin label, and find where a program lands.

The planner and the candidate pipeline both speak of a bin as ``{axis: level}`` (a level is
the axis's own label: ``smem_tiling`` on a categorical axis, ``[2,4)`` on a numeric one), so a
missed bin can be explained axis by axis ("pattern.reuse is none, wanted smem_tiling").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from pydantic import BaseModel

from structcover.tools.coverage.archive import Archive, GridArchive


class AxisMiss(BaseModel):
    """One axis on which a program is not where the target bin wants it."""

    axis: str
    wanted: str
    got: str | None = None

    def describe(self) -> str:
        """``axis is got, wanted wanted``."""
        got = "missing" if self.got is None else self.got
        return f"{self.axis} is {got}, wanted {self.wanted}"


def bin_levels(archive: Archive, target: str | Mapping[str, str]) -> dict[str, str]:
    """The ``{axis: level}`` a target bin asks for.

    Args:
        archive: The frozen archive.
        target: A bin label of ``archive`` or a mapping of some of its axes to levels (a
            partial target constrains only the axes it names).

    Raises:
        ValueError: An unknown label, axis or level (the message names it).
    """
    if isinstance(target, Mapping):
        dims = {d.name: d for d in archive.dims}
        out = {}
        for axis, level in target.items():
            if axis not in dims:
                raise ValueError(f"target bin: {axis!r} is not an archive axis "
                                 f"({', '.join(dims)})")
            labels = [dims[axis].label(i) for i in range(dims[axis].n_bins)]
            if str(level) not in labels:
                raise ValueError(f"target bin: {axis}={level!r} is not one of {labels}")
            out[axis] = str(level)
        if not out:
            raise ValueError("target bin: no axis given")
        return out
    if isinstance(archive, GridArchive):
        coords = archive.coords(target)  # raises ValueError naming the label
        return {d.name: d.label(c) for d, c in zip(archive.dims, coords, strict=True)}
    if target not in archive.labels():
        raise ValueError(f"target bin {target!r} is not a bin of this archive")
    return {}  # a CVT cell has no per-axis levels; only the label itself can be compared


def program_bin(archive: Archive, values: Mapping[str, Any]) -> tuple[str | None,
                                                                       dict[str, str | None]]:
    """Where a program with extracted feature ``values`` lands: (bin label, per-axis level).

    The label is None when the program cannot be binned (an archive feature is missing or
    holds a level the archive does not know); the per-axis mapping then says which.
    """
    row = pd.DataFrame([{f: values.get(f) for f in archive.features}])
    axis_levels: dict[str, str | None] = {}
    for d in archive.dims:
        i = int(d.index(row[d.name])[0])
        axis_levels[d.name] = d.label(i) if i >= 0 else None
    idx = int(archive.index(row)[0])
    return (archive.label(idx) if idx >= 0 else None), axis_levels


def axis_misses(wanted: Mapping[str, str], got: Mapping[str, str | None]) -> list[AxisMiss]:
    """The axes of ``wanted`` on which ``got`` differs, in ``wanted``'s order."""
    return [AxisMiss(axis=a, wanted=w, got=got.get(a)) for a, w in wanted.items()
            if got.get(a) != w]
