"""Triton launch options: ``num_warps`` and ``num_stages`` at launch sites or in configs."""

from __future__ import annotations

import ast

from structcover.tools.mutations._triton import (
    TritonSource,
    builder,
    dotted,
    int_value,
    is_call,
    parse_triton,
)
from structcover.tools.mutations.base import MutationResult, operator

#: Values tried, and Triton's defaults on NVIDIA GPUs (what a launch without the option gets).
CHOICES = {"num_warps": (2, 4, 8), "num_stages": (2, 3, 4)}
DEFAULTS = {"num_warps": 4, "num_stages": 3}


def _loads_in_loop(func: ast.FunctionDef) -> bool:
    return any(is_call(n, "load") for loop in ast.walk(func)
               if isinstance(loop, (ast.For, ast.While)) for n in ast.walk(loop))


def _configs(func: ast.FunctionDef) -> list[ast.Call]:
    return [n for dec in func.decorator_list for n in ast.walk(dec)
            if isinstance(n, ast.Call) and dotted(n.func).endswith("Config")]


def _set_option(src: TritonSource, call: ast.Call, option: str, value: int
                ) -> tuple[int, int, str] | None:
    """The edit that makes ``call`` pass ``option=value`` (None: it passes a non-literal)."""
    for kw in call.keywords:
        if kw.arg == option:
            if int_value(kw.value) is None:
                return None
            return src.start(kw.value), src.end(kw.value), str(value)
    if any(kw.arg is None for kw in call.keywords):
        return None  # **kwargs might already carry it
    items: list[ast.AST] = [*call.args, *call.keywords]
    if not items:
        at = src.end(call) - 1  # just inside the closing parenthesis
        return at, at, f"{option}={value}"
    at = max(src.end(n) for n in items)  # after the last argument (a trailing comma stays)
    return at, at, f", {option}={value}"


def _current(call: ast.Call, option: str) -> int:
    for kw in call.keywords:
        if kw.arg == option:
            return int_value(kw.value) or 0
    return DEFAULTS[option]


def _mutate(name: str, option: str, program: str) -> MutationResult:
    parsed = parse_triton(program)
    if isinstance(parsed, str):
        return MutationResult(operator=name, not_applicable=parsed)
    src = parsed
    b = builder(name, program)
    calls: list[tuple[ast.Call, str]] = []
    for kernel, func in src.kernels.items():
        if option == "num_stages" and not _loads_in_loop(func):
            continue  # nothing for the software pipeline to overlap
        configs = _configs(func)
        if configs:  # autotuned: the option belongs to each config, not to the launch
            calls += [(c, f"{kernel} triton.Config") for c in configs]
        else:
            calls += [(launch.call, f"{kernel} launch") for launch in src.launches(kernel)]
    if not calls:
        return b.done("no launch site or triton.Config to set it on" if option == "num_warps"
                      else "no kernel loads inside a loop (num_stages pipelines such loops) "
                      "with a launch site or triton.Config to set it on")
    by_site: dict[str, list[ast.Call]] = {}
    for call, site in calls:
        by_site.setdefault(site, []).append(call)
    for site, group in by_site.items():
        current = {_current(c, option) for c in group}
        for value in CHOICES[option]:
            if current == {value}:
                continue
            edits = [_set_option(src, c, option, value) for c in group]
            if any(e is None for e in edits):
                break
            b.add(src.apply([e for e in edits if e is not None]), **{option: value}, site=site)
        if b.result.variants:
            break
    return b.done(f"every launch passes {option} as a computed value or through **kwargs")


@operator("triton_num_warps", family="triton_warps_stages", language="triton")
def triton_num_warps(program: str) -> MutationResult:
    """Set ``num_warps`` (2, 4 or 8, each but the current) on a Triton kernel's launches.

    Moves:
        triton.num_warps: set

    Edits ``num_warps=`` at every launch of the first kernel (added when absent: the default
    is 4), or in every ``triton.Config`` of an autotuned kernel (the autotuner owns the
    option there). Changes no result, only how many warps run a program instance. Does not
    apply when no launch exists or the value is computed or passed through ``**kwargs``.
    """
    return _mutate("triton_num_warps", "num_warps", program)


@operator("triton_num_stages", family="triton_warps_stages", language="triton")
def triton_num_stages(program: str) -> MutationResult:
    """Set ``num_stages`` (2, 3 or 4, each but the current) on a Triton kernel's launches.

    Moves:
        triton.num_stages: set
        pipeline.stages: set

    Edits ``num_stages=`` like ``triton_num_warps`` edits ``num_warps=`` (default 3); the
    software pipeline of the kernel's loops gets that many buffers. Does not apply to kernels
    without a ``tl.load`` inside a loop (no pipeline: the option would change nothing), when
    no launch exists, or the value is computed or passed through ``**kwargs``.
    """
    return _mutate("triton_num_stages", "num_stages", program)
