"""Feature values must not depend on PYTHONHASHSEED (set iteration order).

A dry-run ``loads_indirect`` variant of the corpus's ``gemm/smem_tiled32_unroll`` gave
``dataflow.index_vars`` 6 under seed 0 and 5 under seed 1: the divergence check walked the
names of a condition in a set's order, and the first thread-dependent name decided which
variables the resolver had memoized. Each seed runs in its own interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

_SCRIPT = r"""
import json
from structcover.tools.data.corpus import load_corpus
from structcover.tools.features.extract import extract_values
from structcover.tools.mutations.base import dry_run, get_operator

sources = {}
for fam in load_corpus():
    if fam.name in ("gemm", "reduction", "softmax"):
        for prog in fam.programs:
            sources[f"{fam.name}/{prog.name}"] = prog.source
with dry_run():
    for key in [k for k in sources if k.startswith("gemm/")]:
        for i, v in enumerate(get_operator("loads_indirect").func(sources[key]).variants):
            sources[f"{key}#loads_indirect{i}"] = v.source
print(json.dumps({k: extract_values(s) for k, s in sorted(sources.items())}, sort_keys=True,
                 default=str))
"""


def _values(seed: int) -> dict[str, dict[str, object]]:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                         text=True, check=True, timeout=300).stdout
    return json.loads(out)


def test_values_do_not_depend_on_the_hash_seed() -> None:
    first, second = _values(0), _values(1)
    assert "gemm/smem_tiled32_unroll#loads_indirect0" in first  # the case that differed
    assert first.keys() == second.keys()
    differing = {k: sorted(n for n in first[k] if first[k][n] != second[k][n])
                 for k in first if first[k] != second[k]}
    assert not differing
