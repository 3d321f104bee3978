"""Mutation operators on KernelBench candidates: applied inside the embedded CUDA, re-embedded.

A KernelBench candidate is a Python file whose kernels are string literals handed to
``load_inline``. The operators work on CUDA text, so :func:`apply_embedded` runs an operator on
each ``cuda_sources`` text that defines a kernel (the operator's own compile check sees that
text, device code sliced out of it) and splices each variant back into the literals it came
from (``tools/kernelbench/embed.py``). Every variant is then a whole candidate: a valid Python
file whose ``ModelNew`` loads the mutated kernel. A variant that cannot be re-embedded is
rejected with the reason, like one that does not compile.

:func:`run_operator` is the one entry point for callers that hold either kind of program (the
campaign's mutate tool, ``structcover mutate``): ``.cu`` text goes to the operator as is, and
a Triton program (Python with ``@triton.jit`` kernels) only to the Triton operators.
"""

from __future__ import annotations

import ast
import functools

from structcover.schema import content_hash
from structcover.tools.mutations.base import MutationResult, Variant, get_operator

__all__ = ["apply_embedded", "is_kernelbench_candidate", "run_operator"]


def is_kernelbench_candidate(source: str) -> bool:
    """Whether ``source`` is Python that calls ``load_inline`` (a KernelBench-format candidate).

    CUDA text never parses as Python, so a ``.cu`` program is never mistaken for one.
    """
    return "load_inline" in source and _parses(source)


@functools.lru_cache(maxsize=256)
def _parses(source: str) -> bool:
    """Whether ``source`` is Python, once per text (the planner asks it of one parent for
    every registered operator)."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def apply_embedded(name: str, python_text: str) -> MutationResult:
    """Operator ``name`` applied inside every kernel-defining ``cuda_sources`` text.

    Args:
        name: A registered operator.
        python_text: The KernelBench candidate.

    Returns:
        Variants whose ``source`` is the whole re-embedded candidate (``params`` name the
        extension and source index as ``source``), or why none came out.

    Raises:
        KeyError: Unknown operator.
    """
    from structcover.tools.kernelbench.embed import EmbedError, embedded_sources, replace_source

    info = get_operator(name)
    result = MutationResult(operator=name)
    try:
        sources = [s for s in embedded_sources(python_text) if "__global__" in s.text]
    except EmbedError as exc:
        result.not_applicable = f"the candidate's CUDA cannot be re-embedded: {exc}"
        return result
    if not sources:
        result.not_applicable = "no load_inline cuda_sources text defines a __global__ kernel"
        return result
    reasons: list[str] = []
    parent = content_hash(python_text)
    for src in sources:
        inner = info.func(src.text)
        where = f"{src.name}.cuda_sources[{src.index}]"
        result.rejected += [f"{where}: {r}" for r in inner.rejected]
        if inner.not_applicable and not inner.variants:
            reasons.append(f"{where}: {inner.not_applicable}")
        for variant in inner.variants:
            try:
                spliced = replace_source(python_text, src, variant.source)
            except EmbedError as exc:
                result.rejected.append(f"{where} {variant.params}: cannot re-embed: {exc}")
                continue
            if any(v.source == spliced for v in result.variants):
                continue
            result.variants.append(Variant(
                source=spliced, operator=name, params={**variant.params, "source": where},
                promised=dict(variant.promised), parent_id=parent))
    if not result.variants:
        why = "; ".join(reasons) or "no candidate"
        if result.rejected and not reasons:
            why += "; rejected: " + "; ".join(result.rejected[:3])
        result.not_applicable = why
    return result


def run_operator(name: str, source: str) -> MutationResult:
    """Operator ``name`` on a program of any format (``.cu`` text, a ``load_inline``
    KernelBench file, or a Triton program), dispatched on the operator's language.

    Triton operators (``language == "triton"``) run on the Python text of a program that
    defines ``@triton.jit`` kernels; CUDA operators on ``.cu`` text or inside ``load_inline``
    sources. Either kind on the other's program does not apply, with the reason.

    Raises:
        KeyError: Unknown operator.
    """
    from structcover.tools.mutations._triton import is_triton_program

    info = get_operator(name)
    if info.language == "triton":
        if not is_triton_program(source):
            return MutationResult(operator=name, not_applicable=(
                "not a Triton program (no @triton.jit kernel in parsable Python): Triton "
                "operators rewrite Triton kernels; CUDA programs take the CUDA operators"))
        return info.func(source)
    if is_kernelbench_candidate(source):
        return apply_embedded(name, source)
    if is_triton_program(source):
        return MutationResult(operator=name, not_applicable=(
            "a Triton program (@triton.jit kernels, no load_inline CUDA): CUDA operators "
            "rewrite CUDA kernels; Triton programs take the triton_* operators"))
    return info.func(source)
