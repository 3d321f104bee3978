"""The memory port's parents: the nearest verified programs, with room kept for programs the
campaign did not write (its own mutants crowd the nearest places, while the operators apply to
the originals' plain shapes)."""

from __future__ import annotations

from pathlib import Path

from structcover.campaign.toolbox import ORIGINAL_PARENTS, SerialStore, StoreMemory
from structcover.tools.store import MemoryStore, ProgramRecord


class _Coverage:
    """Bins written ``a=x,b=y``; distance = axes that differ."""

    def levels(self, label: str) -> dict[str, str]:
        return dict(item.split("=") for item in label.split(",")) if label else {}

    def bin_distance(self, label: str, target: dict[str, str]) -> int:
        have = self.levels(label)
        return sum(have.get(a) != v for a, v in target.items())


def _memory(tmp: Path, programs: list[tuple[str, str, str]]) -> StoreMemory:
    store = SerialStore(lambda: MemoryStore.open(tmp / "memory"))
    store.add_programs([ProgramRecord(task="t", source=f"// {name}\n", features={"x": float(i)},
                                      verified=True, round=0, origin=origin, bin_label=label)
                        for i, (name, origin, label) in enumerate(programs)])
    return StoreMemory(store, _Coverage())  # type: ignore[arg-type]


def test_originals_keep_places_among_nearer_mutants(tmp_path: Path) -> None:
    mutants = [(f"m{i}", "mutant", "a=1,b=0") for i in range(5)]
    originals = [("ref", "input", "a=0,b=0"), ("ref2", "input", "a=0,b=0")]
    memory = _memory(tmp_path, mutants + originals)
    try:
        got = memory.nearest("t", {"a": "1", "b": "1"}, k=4)
        names = [n.source.split()[1] for n in got]
        assert len(got) == 4 and all(n.startswith("m") for n in names[:2])
        assert sorted(names[2:]) == ["ref", "ref2"]  # last: every mutant kept is nearer
        assert ORIGINAL_PARENTS == 2
        # With the originals already among the nearest, the order is plain distance.
        near = memory.nearest("t", {"a": "0", "b": "0"}, k=4)
        assert sorted(n.source.split()[1] for n in near[:2]) == ["ref", "ref2"]
    finally:
        memory.store.close()


def test_copies_of_one_original_take_one_place(tmp_path: Path) -> None:
    # A round holds a program once per rollout: three copies of "ref" must not fill the
    # originals' places and keep "other" out.
    mutants = [(f"m{i}", "mutant", "a=1,b=0") for i in range(5)]
    store = SerialStore(lambda: MemoryStore.open(tmp_path / "memory"))
    records = [ProgramRecord(task="t", source=f"// {name}\n", features={"x": 1.0, "y": 1.0},
                             verified=True, round=0, origin=origin, bin_label=label)
               for name, origin, label in mutants]
    # the copies sit nearer the mutants in feature space than "other" does
    records += [ProgramRecord(program_id=f"rollout-{i}", task="t", source="// ref\n",
                              features={"x": 1.0, "y": 1.0}, verified=True, round=i,
                              origin="input", bin_label="a=0,b=0")
                for i in range(3)]
    records.append(ProgramRecord(task="t", source="// other\n", features={"x": 0.0, "y": 9.0},
                                 verified=True, round=0, origin="input", bin_label="a=0,b=0"))
    store.add_programs(records)
    memory = StoreMemory(store, _Coverage())  # type: ignore[arg-type]
    try:
        got = [n.source.split()[1] for n in memory.nearest("t", {"a": "1", "b": "1"}, k=4)]
        assert sorted(got[2:]) == ["other", "ref"] and len(set(got)) == len(got)
    finally:
        memory.store.close()
