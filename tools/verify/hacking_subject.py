"""The program as the anti-hacking checks read it, and its launcher signature against the task.

``subject`` preprocesses a CUDA/C++ program once (``preprocess.py``: macros expanded, inactive
code and comments dropped, host and device passes) and collects its ``typedef``/``using``
aliases, so every check in ``hacking.py`` reads the same text and a renamed type resolves to
what it names. ``check_launcher_signature`` compares the launcher's parameters with the task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from structcover.schema import TaskSpec, TensorArg
from structcover.tools.verify.hacking_names import resolve_namespace_aliases
from structcover.tools.verify.preprocess import Preprocessed, preprocess

_LAUNCHER = re.compile(r'extern\s+"C"\s+[\w\s*]+?\b(\w+)\s*\(([^)]*)\)\s*\{')


@dataclass
class Subject:
    """A program as the checks read it (built once per program by :func:`subject`)."""

    source: str
    pp: Preprocessed
    spec: TaskSpec | None = None
    #: CUDA text taken out of a Python (KernelBench) file: torch's extension headers and
    #: tensor helpers are the harness there, not delegation.
    embedded: bool = False
    typedefs: dict[str, str] = field(default_factory=dict)

    @property
    def passes(self) -> list[str]:
        """The device and host passes."""
        return self.pp.passes


#: Namespaces whose aliases are spelled out before any check reads the text.
_ALIASED_ROOTS = ("std", "torch", "at", "c10", "thrust", "cub", "cutlass", "cute")


def subject(source: str, spec: TaskSpec | None = None, *, embedded: bool = False) -> Subject:
    """Preprocess ``source`` once for every check (namespace aliases of library namespaces
    spelled out: ``namespace S = std; S::thread`` reads ``std::thread``)."""
    pp = preprocess(source)
    pp = replace(pp, host=resolve_namespace_aliases(pp.host, _ALIASED_ROOTS),
                 device=resolve_namespace_aliases(pp.device, _ALIASED_ROOTS))
    return Subject(source, pp, spec, embedded, _typedefs(pp.host + "\n" + pp.device))


def as_subject(program: str | Subject) -> Subject:
    return program if isinstance(program, Subject) else subject(program)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def first_match(patterns: list[tuple[str, str]], subj: Subject) -> str | None:
    """The description of the first pattern found in either pass, with what matched."""
    for text in subj.passes:
        for pattern, what in patterns:
            if m := re.search(pattern, text, re.M):
                return f"{what}: `{m.group(0).strip()[:80]}` (line {line_of(text, m.start())})"
    return None


def _typedefs(text: str) -> dict[str, str]:
    """``typedef T name;`` and ``using name = T;`` aliases, resolved through each other."""
    table: dict[str, str] = {}
    for m in re.finditer(r"\btypedef\s+([^;{}()]+?)\s*\b(\w+)\s*;", text):
        table[m.group(2)] = m.group(1).strip()
    for m in re.finditer(r"\busing\s+(\w+)\s*=\s*([^;{}]+);", text):
        table[m.group(1)] = m.group(2).strip()
    for _ in range(8):  # chains of aliases
        changed = False
        for name, target in table.items():
            def expand(word: re.Match[str], own: str = name) -> str:
                return word.group(0) if word.group(0) == own else table.get(word.group(0),
                                                                            word.group(0))

            new = re.sub(r"\b\w+\b", expand, target)
            if new != target:
                table[name], changed = new, True
        if not changed:
            break
    return table


def _resolve(ctype: str, typedefs: dict[str, str]) -> str:
    return re.sub(r"\b\w+\b", lambda w: typedefs.get(w.group(0), w.group(0)), ctype)


def launcher_params(subj: Subject) -> list[tuple[str, str]]:
    """``(type, name)`` of every parameter of the launcher (the spec's, else ``extern "C"``)."""
    text = subj.pp.host
    if subj.spec is not None:
        pattern = re.compile(rf"\b{re.escape(subj.spec.launcher)}\s*\(([^)]*)\)\s*\{{")
        matches = [m.group(1) for m in pattern.finditer(text)]
    else:
        matches = [m.group(2) for m in _LAUNCHER.finditer(text)]
    params: list[tuple[str, str]] = []
    for group in matches[:1]:
        for part in group.split(","):
            part = part.strip()
            if m := re.match(r"(.*?[\s*&])(\w+)\s*(\[\s*\])?$", part):
                ctype = m.group(1).strip() + (" *" if m.group(3) else "")
                params.append((_resolve(ctype, subj.typedefs), m.group(2)))
            elif part and part != "void":
                params.append((_resolve(part, subj.typedefs), ""))
    return params


_CTYPE_OF = {"float32": {"float"}, "float64": {"double"}, "float16": {"__half", "half"},
             "bfloat16": {"__nv_bfloat16", "nv_bfloat16"},
             "int8": {"signed char", "int8_t", "char"}, "uint8": {"unsigned char", "uint8_t"},
             "int32": {"int", "int32_t", "signed int", "signed"},
             "uint32": {"unsigned int", "unsigned", "uint32_t"},
             "int64": {"long long", "long long int", "int64_t", "long"},
             "int": {"int", "int32_t", "signed int", "signed"},
             "long long": {"long long", "long long int", "int64_t", "long"},
             "unsigned int": {"unsigned int", "unsigned", "uint32_t"},
             "float": {"float"}, "double": {"double"}}
_KNOWN = set().union(*_CTYPE_OF.values()) | {"short", "unsigned short", "size_t", "void",
                                             "unsigned long long", "int16_t", "uint64_t"}


def _base_type(ctype: str) -> str:
    words = re.sub(r"[*&]|\b(?:const|volatile|__restrict__|__restrict|restrict|struct)\b", " ",
                   ctype).split()
    return " ".join(words)


# Rationale: the harness calls the launcher with the task's arguments in the task's order; a
# launcher with other parameters reads garbage or reinterprets buffers (a float task read as
# half). Hard; only with a task spec, and only types it can resolve are compared.
def check_launcher_signature(program: str | Subject) -> tuple[bool, str]:
    """The launcher's parameters match the task spec (count, pointer-ness, known types)."""
    subj = as_subject(program)
    if subj.spec is None or subj.embedded:
        return True, "no task spec to compare with"
    params = launcher_params(subj)
    if not params:
        return True, f"no definition of `{subj.spec.launcher}` found to compare"
    want = len(subj.spec.args) + 1
    if len(params) != want:
        return False, (f"launcher `{subj.spec.launcher}` takes {len(params)} parameters; the task "
                       f"passes {want} ({subj.spec.c_signature()})")
    for (ctype, name), arg in zip(params, subj.spec.args, strict=False):  # stream last
        pointer = "*" in ctype
        is_tensor = isinstance(arg, TensorArg)
        if pointer != is_tensor:
            what = "a pointer" if pointer else "not a pointer"
            wanted = "a buffer" if is_tensor else "a scalar"
            return False, f"parameter `{name}` is {what} but the task's `{arg.name}` is {wanted}"
        base = _base_type(ctype)
        expected = _CTYPE_OF[arg.dtype if is_tensor else arg.ctype]  # type: ignore[union-attr]
        if base in _KNOWN and base not in expected and base != "void":
            kind = arg.dtype if isinstance(arg, TensorArg) else arg.ctype
            return False, f"parameter `{name}` has type `{base}`; the task's `{arg.name}` is {kind}"
    if "cudaStream_t" not in params[-1][0] and _base_type(params[-1][0]) in _KNOWN:
        return False, "the last launcher parameter must be the cudaStream_t"
    return True, "launcher matches the task"
