"""Extract inline CUDA sources from KernelBench-style Python files.

KernelBench solutions embed CUDA C++ in Python strings passed to
``torch.utils.cpp_extension.load_inline``. We find string literals that look like CUDA with
Python's own parser (so comments and docstrings are not confused with code); a file that does
not parse as Python falls back to scanning triple-quoted blocks.
"""

from __future__ import annotations

import ast
import re

#: Markers that make a string literal CUDA source rather than prose.
_CUDA_MARKERS = ("__global__", "__device__", "<<<", "#include <cuda", "#include <torch",
                 "torch::Tensor", "cudaStream_t")
_TRIPLE = re.compile(r'("""|\'\'\')(.*?)\1', re.DOTALL)


def _looks_like_cuda(text: str) -> bool:
    return any(marker in text for marker in _CUDA_MARKERS)


def extract_cuda_sources(python_text: str) -> list[str]:
    """Return the CUDA source strings embedded in a Python file, in file order.

    Args:
        python_text: The Python file's text.

    Returns:
        Each string literal that looks like CUDA/C++ source; empty when none does.
    """
    try:
        tree = ast.parse(python_text)
    except (SyntaxError, ValueError):
        return [m.group(2) for m in _TRIPLE.finditer(python_text) if _looks_like_cuda(m.group(2))]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _looks_like_cuda(node.value):
            found.append((node.lineno, node.col_offset, node.value))
    return [text for _, _, text in sorted(found)]
