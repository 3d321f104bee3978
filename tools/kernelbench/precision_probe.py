"""The response probe: does a candidate's output follow its inputs below float16's resolution?

The precision rule (``precision.py``) sees an error far past the reference's own rounding. That
has two causes it cannot tell apart by size: arithmetic at a lower precision (float16, tf32,
bfloat16 inputs or accumulators) and an *approximation of the function* done in full float32
(the tanh form of GELU, a polynomial exp), which KernelBench accepts within its tolerance.
Their behaviour differs. Nudge a sparse set of input elements by 2**-19 of their value (about
16 float32 ulps): a float32 computation, approximate or not, moves the outputs that depend on
them; one that rounds its inputs or accumulators to float16 (a float16 ulp is 2**-10 of the
value) almost never notices, since such a nudge crosses a float16 rounding boundary about once
in 500 times.

The child runs ``forward`` twice on trial 0's inputs, plain and nudged, under one fixed emulator
schedule on one worker (so atomics and block order cannot move the outputs by themselves), and
reports per output how many elements changed. The rule then fails a candidate on precision only
when its outputs did not respond (docs/KERNELBENCH.md, "Precision").
"""

from __future__ import annotations

from typing import Any

__all__ = ["EVERY", "NUDGE", "RESPONSE_SHARE", "nudged", "reconsider", "responded", "run_probe"]

#: One input element in this many is nudged (at least one per tensor).
EVERY = 61
#: The nudge, relative: about 16 float32 ulps (a sum of hundreds of terms still moves), 1/512 of
#: a float16 ulp (an input rounded to float16 moves once in about 500 nudges).
NUDGE = 2.0 ** -19
#: Share of the expected responses (nudged elements, at most the output's size) that must show
#: as changed output elements for the output to count as following its inputs.
RESPONSE_SHARE = 0.25


def nudged(inputs: list[Any]) -> tuple[list[Any], int]:
    """Copies of ``inputs`` with every :data:`EVERY`-th element of each float tensor scaled by
    ``1 + NUDGE``; the number of nudged elements."""
    import torch

    out, count = [], 0
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
            y = x.detach().clone()
            flat = y.view(-1) if y.is_contiguous() else y.reshape(-1)
            picked = flat[::EVERY]
            flat[::EVERY] = picked * (1.0 + NUDGE)
            if not y.is_contiguous():
                y = flat.view(y.shape)
            count += picked.numel()
            out.append(y)
        else:
            out.append(x)
    return out, count


def responded(changed: int, size: int, nudges: int) -> bool:
    """Whether ``changed`` output elements (of ``size``) are a response to ``nudges`` nudges."""
    expected = min(nudges, size)
    return expected > 0 and changed >= max(1.0, RESPONSE_SHARE * expected)


def run_probe(model: Any, inputs: list[Any], modules: list[Any]) -> dict[str, Any]:
    """In the candidate's child: ``forward`` plain and nudged under one fixed schedule.

    Args:
        model: The constructed ``ModelNew``.
        inputs: Trial 0's inputs.
        modules: The CPU-built extension modules the candidate loaded (their ``_sc_configure``
            fixes the emulator's schedule for the two calls and restores the default after).

    Returns:
        ``{"ran": True, "nudges": n, "outputs": [{"size", "changed"}, ...]}`` (one entry per
        output; ``changed`` is None for a non-float output), or ``{"ran": False, "why": ...}``.
    """
    import torch

    from structcover.tools.kernelbench.child_io import _flatten, _short

    moved, count = nudged(inputs)
    try:
        for module in modules:
            module._sc_configure(workers=1, schedule=0)
        with torch.no_grad():
            plain = _flatten(model(*inputs))
            after = _flatten(model(*moved))
    except Exception as exc:  # noqa: BLE001 - the candidate's own failure: no probe
        return {"ran": False, "why": _short(exc)}
    finally:
        for module in modules:
            module._sc_configure()
    outputs: list[dict[str, Any]] = []
    for a, b in zip(plain, after, strict=False):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.is_floating_point() and a.shape == b.shape):
            outputs.append({"size": 0, "changed": None})
            continue
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))
        outputs.append({"size": int(a.numel()), "changed": int((~same).sum())})
    return {"ran": True, "nudges": count, "outputs": outputs}


def reconsider(precision_detail: str, probe: dict[str, Any]) -> tuple[bool, str]:
    """Whether a ``precision`` failure stands, given the probe; and the sentence that says why.

    The failure is withdrawn only when the probe ran and every float output responded: the
    candidate computed in float32 and its error is an approximation of the function, which the
    flat tolerance has already accepted.
    """
    if not probe.get("ran"):
        return True, f"the response probe did not run ({probe.get('why', 'no result')})"
    nudges = int(probe.get("nudges", 0))
    floats = [o for o in probe.get("outputs", []) if o.get("changed") is not None]
    quiet = [(i, o) for i, o in enumerate(floats) if not responded(o["changed"], o["size"], nudges)]
    if floats and not quiet:
        changed = ", ".join(f"{o['changed']} of {o['size']}" for o in floats)
        return False, (f"no precision failure: {precision_detail.split(':', 1)[0]} errs past the "
                       f"limit, but every output follows nudges of {nudges} input "
                       f"elements ({changed} elements changed): float32 arithmetic with an "
                       "approximation of the function (e.g. tanh-form GELU), which the "
                       "tolerance decides")
    i, o = quiet[0] if quiet else (0, {"changed": 0, "size": 0})
    return True, (f"its output {i} did not follow nudges of {nudges} input elements "
                  f"({o['changed']} of {o['size']} elements changed): it rounds below float32")
