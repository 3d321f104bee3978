"""``verify_kernelbench``: is a KernelBench candidate's ``ModelNew`` equivalent to the problem's ``Model``?

Contract (the CLI's ``verify CAND.py --task PROBLEM.py``, the campaign's Verifier and the
mutation campaign call this one function):

* It never raises for a bad *candidate*: syntax errors, unresolvable ``load_inline`` text,
  build errors, crashes, timeouts, races, wrong outputs and hacks are verdicts
  (``Verdict.failure`` is a short kind, ``Verdict.detail`` the reason without data values). It
  raises ``ValueError`` only for a bad *call* (an unknown backend, a bad budget).
* Constructs the chosen backend cannot run faithfully give ``failure == "unsupported"`` and
  ``detail == "unsupported: <construct>"``, ``equivalent is None``: never a wrong verdict.
* The candidate's Python runs only in the sandboxed child (``child.py``, in the bubblewrap jail
  of ``tools/verify/jail.py``); the reference runs in a separate child, so a candidate never
  shares a process with the reference outputs it is compared against. The comparison happens
  here (``tools/verify/compare.py``).
* ``backend``: ``cpu`` (torch on CPU, ``load_inline`` sources built on the project's emulator),
  ``gpu`` (torch on CUDA: the real ``load_inline``, timing and speedup), ``auto`` (gpu where a
  device is usable, else cpu). The verdict's ``backend`` names the one that decided.
* ``seed`` replays the same inputs and initial weights; ``Verdict.notes`` says when the problem's
  sizes were shrunk to the work budget (a candidate hard-coding the original sizes then fails).
"""

from __future__ import annotations

from typing import Literal

from structcover.schema import Verdict
from structcover.tools.kernelbench.problem import Problem

__all__ = ["DEFAULT_WORK_BUDGET", "verify_kernelbench"]

#: Work budget (product of the problem's scaling sizes) on the CPU path.
DEFAULT_WORK_BUDGET = 2.0 ** 22


def verify_kernelbench(candidate_text: str, problem: Problem, *,
                       backend: Literal["auto", "cpu", "gpu"] = "auto", seed: int = 0,
                       trials: int = 3, work_budget: float | None = None,
                       timeout_s: float = 300.0) -> Verdict:
    """Check ``candidate_text`` (a Python file defining ``ModelNew``) against ``problem``.

    Args:
        candidate_text: The candidate's Python source.
        problem: The reference problem (:func:`~structcover.tools.kernelbench.problem.resolve_problem`).
        backend: ``auto``, ``cpu`` or ``gpu``.
        seed: Seed of the first trial's inputs and of the weights of both models.
        trials: Correctness trials (each with fresh inputs).
        work_budget: Shrink the problem's sizes to this work (default: the CPU budget on the
            CPU path, none on the GPU path).
        timeout_s: Wall-clock limit of each sandboxed child.

    Returns:
        The verdict (see the module doc).
    """
    raise NotImplementedError("landing next")
