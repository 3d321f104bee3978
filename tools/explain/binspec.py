"""Bins as users write them: ``"reuse=smem_tiling,global_access=strided"`` (any subset of the
archive's axes, short axis names without the ``pattern.`` prefix, ``,`` or ``|`` between
items) or a full archive label. A spec names a region of the archive: every bin whose levels
match the given ones.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from structcover.tools.coverage.labels import split_cell

_SEP = re.compile(r"\s*[,|;]\s*(?=[\w.]+\s*=)")


class BinSpecError(ValueError):
    """A bin spec that names no axis or level of the archive (the message lists the valid
    ones)."""


@dataclass(frozen=True)
class BinSpec:
    """A parsed spec: ``{axis: level}`` with the archive's full axis names."""

    text: str
    levels: dict[str, str]
    bins: tuple[str, ...]

    @property
    def exact(self) -> bool:
        """True when the spec names exactly one bin."""
        return len(self.bins) == 1

    def short(self) -> str:
        """The spec with short axis names, as users write it."""
        return ",".join(f"{short_axis(a)}={v}" for a, v in self.levels.items())


def short_axis(axis: str) -> str:
    """``pattern.reuse`` -> ``reuse``."""
    return axis.split(".", 1)[1] if axis.startswith("pattern.") else axis


def axis_levels(archive: Any) -> dict[str, list[str]]:
    """Every axis of the archive with its levels, in the archive's order."""
    out: dict[str, list[str]] = {}
    for label in archive.labels():
        for axis, b in archive.describe_bin(label).items():
            text = level_text(b)
            levels = out.setdefault(axis, [])
            if text not in levels:
                levels.append(text)
    return out


def level_text(bound: Any) -> str:
    """A bound as the level users write (categories as is, ranges rendered)."""
    return str(bound.value) if bound.value is not None else bound.render()


def parse_spec(text: str, archive: Any) -> BinSpec:
    """Resolve ``text`` against the archive.

    Raises:
        BinSpecError: Empty spec, an unknown axis or level, an axis given twice, or a
            combination no bin of the archive has; the message lists the valid axes and the
            levels of the axis in question.
    """
    valid = axis_levels(archive)
    raw = split_cell(text.strip())[1]
    if not raw:
        raise BinSpecError(f"bin {text!r}: empty; write axis=level items such as "
                           f"{_example(valid)} ({_axes(valid)})")
    levels: dict[str, str] = {}
    for item in _SEP.split(raw):
        if "=" not in item:
            raise BinSpecError(f"bin {text!r}: {item!r} is not axis=level; valid axes: "
                               f"{_axes(valid)}")
        name, level = (p.strip() for p in item.split("=", 1))
        axis = _axis(name, valid, text)
        if axis in levels:
            raise BinSpecError(f"bin {text!r}: axis {short_axis(axis)!r} given twice")
        levels[axis] = _level(axis, level, valid[axis], text)
    bins = tuple(lab for lab in archive.labels()
                 if all(level_text(archive.describe_bin(lab)[a]) == v
                        for a, v in levels.items()))
    if not bins:
        raise BinSpecError(f"bin {text!r}: no bin of the archive has all of these levels")
    return BinSpec(text=text, levels=levels, bins=bins)


def _axis(name: str, valid: dict[str, list[str]], text: str) -> str:
    if name in valid:
        return name
    matches = [a for a in valid if short_axis(a) == name or a.endswith("." + name)]
    if len(matches) == 1:
        return matches[0]
    # A unique prefix of a short name ("global" for global_access) is unambiguous.
    matches = [a for a in valid if short_axis(a).startswith(name)]
    if len(matches) == 1:
        return matches[0]
    close = difflib.get_close_matches(name, [short_axis(a) for a in valid], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise BinSpecError(f"bin {text!r}: unknown axis {name!r}{hint}; valid axes: {_axes(valid)}")


def _level(axis: str, level: str, levels: list[str], text: str) -> str:
    if level in levels:
        return level
    close = difflib.get_close_matches(level, levels, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise BinSpecError(f"bin {text!r}: {short_axis(axis)} has no level {level!r}{hint}; "
                       f"valid levels of {short_axis(axis)}: {', '.join(levels)}")


def _axes(valid: dict[str, list[str]]) -> str:
    return "; ".join(f"{short_axis(a)} = {'|'.join(v)}" for a, v in valid.items())


def _example(valid: dict[str, list[str]]) -> str:
    items = list(valid.items())[:2]
    return repr(",".join(f"{short_axis(a)}={v[-1]}" for a, v in items))
