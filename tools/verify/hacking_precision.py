"""The precision check: a float task computed in half, bf16 or a narrower float.

Part of the flat list in ``hacking.CHECKS``. It reads both preprocessed passes (a ``typedef``,
``using`` or macro that renames a half type shows the type), and names the conversions and types
themselves, not only their calls: ``auto f = &__float2half;`` converts all the same. Half
arithmetic is allowed when the task's buffers are half/bf16.
"""

from __future__ import annotations

import re

from structcover.tools.verify.hacking_subject import (
    Subject,
    as_subject,
    first_match,
    launcher_params,
)

__all__ = ["check_no_precision_downgrade"]

_HALF_TYPES = r"(?:__half2?|half2?|__nv_bfloat162?|nv_bfloat162?|_Float16|__fp16|__bf16)"
_HALF_USE = [
    # Named at all, not only called (`auto f = &__float2half;`), from any source type
    # (`__double2half`, `__floats2half2_rn`, `__ushort_as_half`).
    (r"\b__\w*?2(?:half|bfloat16|h)\w*|\b__\w*_as_(?:half|bfloat16)2?\b",
     "converts to half/bf16"),
    (r"\b__h(?:add|mul|fma|sub|div)2?\w*", "computes in half"),
    (r"\b(?:__half2?|__nv_bfloat162?|nv_bfloat162?|_Float16|__fp16|__bf16)\b|"
     r"\b__(?:half2?|nv_bfloat162?)_raw\b", "uses a half/bf16 type"),
    (r"\b__nv_fp[864]\w*|\b__nv_cvt_\w+", "uses an 8-, 6- or 4-bit float type"),
    # `half` is also a common variable name (`int half = n / 2`): only its uses as a type count.
    (r"\bhalf2?\s*[*&]*\s*[A-Za-z_]\w*\s*[=;,)\[]", "declares a half value"),
    (r"\(\s*half2?\s*\)|<\s*half2?\s*>", "uses a half type (cast or template argument)"),
    (rf"\btypedef\s+[^;]*\b{_HALF_TYPES}\b|\busing\s+\w+\s*=\s*[^;]*\b{_HALF_TYPES}\b",
     "aliases a half type"),
]
_HALF_DTYPES = {"float16", "bfloat16"}


# Rationale: computing a float32 task in half precision is faster and may still pass a loose
# tolerance on small inputs; it silently changes the task. Only flagged when the task's (or,
# without a spec, the launcher's) buffers are not half/bf16. Hard.
def check_no_precision_downgrade(program: str | Subject) -> tuple[bool, str]:
    """No half/bf16 arithmetic when the task's buffers are not half/bf16."""
    subj = as_subject(program)
    if subj.spec is not None:
        if any(a.dtype in _HALF_DTYPES for a in subj.spec.tensors):
            return True, "the task's buffers are half/bf16"
    elif any(re.search(rf"\b{_HALF_TYPES}\b", ctype) for ctype, _ in launcher_params(subj)):
        return True, "the task's buffers are half/bf16"
    found = first_match(_HALF_USE, subj)
    if found:
        return False, f"silent precision downgrade: {found}"
    return True, "no precision downgrade"
