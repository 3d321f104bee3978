"""``dataflow.*`` measures: how far index expressions were followed, and loaded values reused
(read off the resolvers the memory family already ran, :mod:`dataflow`)."""

from __future__ import annotations

import re

from structcover.tools.features.dataflow import Resolver
from structcover.tools.features.model import Facts
from structcover.tools.features.poly import thread_dependent


def dataflow_features(facts: Facts, resolvers: dict[int, Resolver]) -> dict[str, float | int]:
    """Data-flow measures over device functions.

    Args:
        facts: The program's facts.
        resolvers: Resolver per function (by id), already used by the memory family so
            their memo holds every index variable that was followed.

    Returns:
        ``dataflow.*`` values.
    """
    index_vars = 0
    max_chain = 0
    chains: list[int] = []
    reused = 0
    for func in facts.funcs:
        if not func.is_device:
            continue
        res = resolvers.get(id(func))
        if res is None:
            continue
        max_chain = max(max_chain, res.max_chain)
        for poly, _err, chain in res.memo.values():
            if poly is not None and thread_dependent(poly):
                index_vars += 1
                chains.append(chain)
        # Values loaded once into a register and read again: the reuse the code exploits.
        body = None
        for name, defs in func.defs.items():
            if defs[0][1].type in ("subscript_expression", "pointer_expression"):
                body = func.node.text if body is None else body
                uses = len(re.findall(rb"\b" + re.escape(name) + rb"\b", body))
                reused += uses >= 3  # the definition plus at least two reads
    return {
        "dataflow.index_vars": index_vars,
        "dataflow.max_chain_length": max_chain,
        "dataflow.mean_chain_length": (sum(chains) / len(chains)) if chains else 0.0,
        "dataflow.loaded_values_reused": reused,
    }
