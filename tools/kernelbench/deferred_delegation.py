"""When the text check's torch delegation is left to the run-time meter (``dispatch_watch.py``).

The text check ``no_library_delegation`` refuses a KernelBench candidate that calls torch compute
in ``forward`` or in its C++ wrapper. Some of that is a finishing step the kernels left to torch
(``partial_sums.sum()``, a BatchNorm's running statistics): the text cannot tell it from
delegation, the run can (:meth:`TorchComputeWatch.finishing`, by the bytes torch read). So on
the KernelBench path the text's finding is a pre-filter that defers to the run when

* the only hard failure is ``no_library_delegation``, and its reason is torch compute that goes
  through torch's dispatcher (a ``torch.*`` op, a tensor method, ``@``, ``torch::``/``at::`` ops
  from C++), which the watch sees however it is spelled; and
* the op is not heavy by nature: a matrix product, a convolution, a linear layer or an
  ``einsum`` is never a finishing step, so those stay refused unrun (cheap, as before); and
* nothing in the text reaches compute the watch cannot see or looks names up at run time:
  ATen's kernels called directly (``at::native::``, ``at::cpu::``, ``at::_ops``), numpy,
  ``ctypes``, libraries (cuBLAS, cuDNN, CUTLASS, Thrust, CUB), ``exec``/``eval``/``getattr``
  and friends. Those stay refused by the text, as before.

Everything deferred is then judged by what ``forward`` does: torch compute beyond a finishing
step is ``hacking`` (``no_library_delegation``) at run time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["defers_to_run"]

#: Reasons of ``no_library_delegation`` for compute that enters torch's dispatcher.
_DISPATCHED = re.compile(
    r"^(?:in the embedded CUDA: )?(?:calls torch op `torch\.|calls tensor method `\.|"
    r"`@` matrix product|calls a torch op: `(?:torch|at)::\w+`|"
    r"calls a torch op as a tensor method: )")
#: Ops that do a problem's main work, never a finishing step (matched in the reason's op name).
_HEAVY = re.compile(r"(?:matmul|\bmm\b|bmm|addmm|addmv|\bmv\b|\bdot\b|einsum|tensordot|conv|"
                    r"linear|matrix product|@)", re.IGNORECASE)
#: Anything that reaches compute outside the dispatcher, or names by computation.
_UNSEEN = re.compile(
    r"\bat\s*::\s*(?:native|cpu|_ops|compositeexplicitautograd\w*|compositeimplicitautograd\w*)"
    r"\b|\bnumpy\b|\bnp\s*\.|\bctypes\b|\bcublas|\bcudnn|\bcutlass|\bcute\s*::|\bthrust\s*::|"
    r"\bcub\s*::|\b(?:exec|eval|compile|getattr|globals|vars|__import__|setattr)\s*\(|"
    r"\bimportlib\b|__dict__|__builtins__|\boperator\s*\.\s*\w|\bfunctools\b|"
    r"\bdispatcher\b|\bcallBoxed\b|findSchema")


def _preprocessed_cuda(candidate_text: str) -> str:
    """The embedded C++/CUDA after the preprocessor: a name pasted together by a macro
    (``at::CAT(nat, ive)::mm``) is whole here, as the text checks read it."""
    import ast

    from structcover.tools.verify.hacking_py import _embedded_cuda
    from structcover.tools.verify.hacking_subject import as_subject

    try:
        cuda = _embedded_cuda(ast.parse(candidate_text))
    except (SyntaxError, ValueError):
        return ""
    return "\n".join(as_subject(cuda).passes) if cuda else ""


def defers_to_run(hard: Sequence[Any], candidate_text: str) -> bool:
    """Whether the hard failures ``hard`` (``CheckResult``s) leave the decision to the run."""
    if len(hard) != 1 or hard[0].name != "no_library_delegation":
        return False
    reason = hard[0].reason
    if not _DISPATCHED.match(reason) or _HEAVY.search(reason):
        return False
    return not _UNSEEN.search(candidate_text) and \
        not _UNSEEN.search(_preprocessed_cuda(candidate_text))
