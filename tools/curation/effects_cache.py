"""Caches of the effect model (``effects.py``): the corpus table indexed once per table and
family, and a view that records which features a pattern rule reads."""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from structcover.tools.curation.effects_table import Transition

#: (operator, axis, before) -> Counter(after): one tier of evidence.
Table = dict[tuple[str, str, str], Counter[str]]


def tally_into(table: Table, key: tuple[str, str, str], after: str) -> None:
    """Count one transition (a Counter made only for a new key: ``setdefault`` built one per
    transition, most of indexing the evidence)."""
    seen = table.get(key)
    if seen is None:
        seen = table[key] = Counter()
    seen[after] += 1


#: Indexed corpus tables by (table identity, its length, family), each with the table held
#: (so its identity stays its own), most recently used last: a campaign builds a model per
#: family and axes after every new outcome, from one shipped table each time.
_MEASURED: OrderedDict[tuple[int, int, str | None],
                       tuple[Sequence[Transition], set[tuple[str, str]], Table, Table]] = \
    OrderedDict()
_MEASURED_LOCK = threading.Lock()


def index_measured(measured: Sequence[Transition], family: str | None
                   ) -> tuple[set[tuple[str, str]], Table, Table]:
    """(operator, family) pairs the corpus table saw apply, and its transitions of all
    families and of ``family``, by (operator, axis, before) (shared by models: read only)."""
    key = (id(measured), len(measured), family)
    with _MEASURED_LOCK:
        hit = _MEASURED.get(key)
        if hit is not None and hit[0] is measured:
            _MEASURED.move_to_end(key)
            return hit[1], hit[2], hit[3]
    applied = {(t.operator, t.family) for t in measured}
    every: Table = {}
    own: Table = {}
    for t in measured:
        for axis, before in t.levels_before.items():
            after = t.levels_after.get(axis)
            if after is None:
                continue
            k = (t.operator, axis, before)
            tally_into(every, k, after)
            if family is not None and t.family == family:
                tally_into(own, k, after)
    with _MEASURED_LOCK:
        _MEASURED[key] = (measured, applied, every, own)
        while len(_MEASURED) > 32:
            _MEASURED.popitem(last=False)
    return applied, every, own


class Reads(Mapping[str, Any]):
    """A read-only view that records which features a pattern rule looked up (``None``:
    it iterated them all), so that a step that writes none of them keeps the rule's level."""

    __slots__ = ("keys_read", "_values")

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values
        self.keys_read: set[str] | None = set()

    def _saw(self, key: str) -> None:
        if self.keys_read is not None:
            self.keys_read.add(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._saw(key)
        return self._values.get(key, default)

    def __getitem__(self, key: str) -> Any:
        self._saw(key)
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self._saw(key)
        return key in self._values

    def __iter__(self) -> Any:
        self.keys_read = None
        return iter(self._values)

    def __len__(self) -> int:
        self.keys_read = None
        return len(self._values)
