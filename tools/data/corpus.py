"""The sample corpus: task families with a TaskSpec, a reference and structural variants.

Layout (package data under ``structcover/corpus/``)::

    <family>/task.yaml          one TaskSpec (more tasks: task_<name>.yaml, e.g. SpMV patterns)
    <family>/reference.cu       the reference program
    <family>/variants/<name>.cu structurally different, correct variants

Every program exposes the task's ``extern "C"`` launcher, so any backend runs it the same way.
Each variant file starts with a ``// variant: <one line on its structure>`` comment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from structcover.schema import TaskSpec


@dataclass(frozen=True)
class CorpusProgram:
    """One program of the corpus."""

    family: str
    name: str
    path: Path
    source: str
    description: str = ""

    @property
    def is_reference(self) -> bool:
        """True for the family's reference program."""
        return self.name == "reference"


@dataclass(frozen=True)
class TaskFamily:
    """A task family: its task specs (one or more), reference and variants."""

    name: str
    root: Path
    tasks: list[TaskSpec]
    reference: CorpusProgram
    variants: list[CorpusProgram] = field(default_factory=list)

    @property
    def programs(self) -> list[CorpusProgram]:
        """The reference followed by the variants."""
        return [self.reference, *self.variants]


def corpus_root() -> Path:
    """Folder that holds the shipped corpus."""
    return Path(str(resources.files("structcover.corpus")))


def _describe(source: str) -> str:
    first = source.lstrip().splitlines()[0] if source.strip() else ""
    return first.split("variant:", 1)[1].strip() if "variant:" in first else ""


def load_task(path: Path) -> TaskSpec:
    """Read one TaskSpec YAML file.

    Raises:
        ValueError: The file is not a valid TaskSpec; the message names the file.
    """
    try:
        # libyaml's loader when present: the pure-Python one dominated repeated corpus loads.
        data = yaml.load(Path(path).read_text(), Loader=_YAML_LOADER)
        return TaskSpec.model_validate(data)
    except Exception as exc:
        raise ValueError(f"{path}: invalid task spec: {exc}") from exc


def load_family(root: Path) -> TaskFamily:
    """Load one family folder."""
    root = Path(root)
    tasks = [load_task(p) for p in sorted(root.glob("task*.yaml"))]
    if not tasks:
        raise ValueError(f"{root}: no task*.yaml")
    ref_path = root / "reference.cu"
    reference = CorpusProgram(root.name, "reference", ref_path, ref_path.read_text(), "reference")
    variants = []
    for path in sorted((root / "variants").glob("*.cu")):
        source = path.read_text()
        variants.append(CorpusProgram(root.name, path.stem, path, source, _describe(source)))
    return TaskFamily(root.name, root, tasks, reference, variants)


def load_corpus(root: Path | None = None) -> list[TaskFamily]:
    """Load every family of the corpus, sorted by name.

    Loads are cached per folder and re-read when any file under it changes (its paths,
    sizes and modification times): the campaign and the demo ask for the corpus many times.
    The list is a fresh copy; the families in it are shared, so do not modify them.
    """
    root = Path(root) if root else corpus_root()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    stamp = tuple((str(p), st.st_size, st.st_mtime_ns) for p in files for st in [p.stat()])
    hit = _CORPUS_CACHE.get(root)
    if hit is None or hit[0] != stamp:
        hit = (stamp, [load_family(p) for p in sorted(root.iterdir())
                       if p.is_dir() and any(p.glob("task*.yaml"))])
        _CORPUS_CACHE[root] = hit
    return list(hit[1])


#: folder -> (fingerprint of its files, the loaded families)
_CORPUS_CACHE: dict[Path, tuple[tuple[tuple[str, int, int], ...], list[TaskFamily]]] = {}
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def find_task(task_id: str, root: Path | None = None) -> tuple[TaskSpec, TaskFamily]:
    """Find a task by id (or by family name when the family has a single task).

    Raises:
        KeyError: No such task in the corpus.
    """
    for family in load_corpus(root):
        for task in family.tasks:
            if task.task_id == task_id or (family.name == task_id and len(family.tasks) == 1):
                return task, family
    raise KeyError(f"no task {task_id!r} in the corpus")


def corpus_records(root: Path | None = None) -> list[dict[str, object]]:
    """Every corpus program as a normalized record (one per task it serves).

    Corpus programs carry no reward: ``correct``/``speedup`` are None until measured.
    """
    from structcover.schema import content_hash

    rows: list[dict[str, object]] = []
    for family in load_corpus(root):
        for task in family.tasks:
            for program in family.programs:
                rows.append({
                    "program_id": content_hash(program.source), "task_id": task.task_id,
                    "family": family.name, "variant": program.name, "prompt": task.description,
                    "program": program.source, "correct": None, "speedup": None,
                    "runtime_ms": None, "round": 0, "reward_source": "given",
                    "source_file": str(program.path.relative_to(family.root.parent)),
                    "meta": "",
                })
    return rows


def resolve_task(task: str) -> TaskSpec:
    """A task given on the command line: a TaskSpec YAML path or a corpus task id.

    Raises:
        ValueError: No such file, an invalid spec, or no such task (the message names ``task``).
    """
    path = Path(task)
    if path.suffix in (".yaml", ".yml"):
        if not path.exists():
            raise ValueError(f"--task {task}: no such file")
        return load_task(path)
    try:
        return find_task(task)[0]
    except KeyError as exc:
        raise ValueError(f"--task {task}: {exc.args[0]}") from None
