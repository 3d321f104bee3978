"""The Synthesizer: for one target gap, propose the next candidate program.

Offline policy: take the verified programs of the task nearest to the target bin (memory),
ask the planner for operator chains whose recorded effects move toward the bin, and apply
them; each (parent, chain, mutant) is tried once. Structured feedback from the Verifier
steers the next attempt: a chain that broke equivalence, compilation or the anti-hacking
checks pushes every chain holding that operator to the back, and a mutant that landed in
another bin is not proposed again. An LLM policy (a later issue) plugs in at
:class:`SynthesisPolicy` and may write programs itself; the Verifier treats both the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from structcover.agents.ports import Neighbour, Toolbox
from structcover.graphs.state import Candidate, Feedback, TargetState
from structcover.schema import content_hash

#: Failure stages that speak against the operator rather than the bin.
_BAD_OPERATOR_STAGES = ("compile", "equivalence", "anti-hacking")


@dataclass
class Proposal:
    """A candidate, or why there is none."""

    candidate: Candidate | None
    reason: str = ""


class SynthesisPolicy(Protocol):
    """Chooses the next (parent, chain) to try."""

    def options(self, tools: Toolbox, target: TargetState,
                neighbours: list[Neighbour]) -> list[tuple[Neighbour, list[str]]]:
        """Candidate (parent, operator chain) pairs, best first."""


class OfflineSynthesisPolicy:
    """Nearest parents x planner chains, feedback-aware ordering."""

    def __init__(self, chains_per_parent: int = 4) -> None:
        # Twelve filled no more of the demo's bins than four (83.2 % against 83.5 %), at more
        # planning and dry-run time.
        self.chains_per_parent = chains_per_parent

    def options(self, tools: Toolbox, target: TargetState,
                neighbours: list[Neighbour]) -> list[tuple[Neighbour, list[str]]]:
        """Interleave parents and chains (parent rank + chain rank), then move chains with an
        operator that failed a hard stage to the back; the order is stable for a seed."""
        bad = {op for f in target["feedback"] if f["stage"] in _BAD_OPERATOR_STAGES
               for op in f["operators"]}
        ranked: list[tuple[int, int, int, Neighbour, list[str]]] = []
        for p, parent in enumerate(neighbours):
            # Plan only with the operators that apply to this parent (a dry run each, once per
            # program): a smaller search, and a parent nothing applies to costs no plan.
            only = tools.mutate.applicable(parent.source)
            if not only:
                continue
            # Where each operator's variant of this parent really lands (dry runs and
            # extraction, no compile): the planner's evidence is by level, and one operator's
            # effect at a level differs between programs (direct_addressing leaves a scalar
            # CSR kernel indirect when its loop is not canonical, and clears it otherwise).
            chains = tools.planner.plan(parent.features, target["bounds"], seed=target["seed"],
                                        k=self.chains_per_parent,
                                        family=tools.family_of.get(target["task"], ""),
                                        operators=only,
                                        first_steps=tools.mutate.first_steps(parent.source))
            for c, chain in enumerate(chains):
                ranked.append((int(any(op in bad for op in chain)), p + c, p, parent, chain))
        ranked.sort(key=lambda r: (r[0], r[1], r[2]))
        return [(r[3], r[4]) for r in ranked]


class Synthesizer:
    """Proposes candidates for one target."""

    def __init__(self, policy: SynthesisPolicy | None = None, neighbours: int = 3,
                 max_options: int = 8, pool: int | None = None) -> None:
        self.policy = policy or OfflineSynthesisPolicy()
        self.neighbours = neighbours
        #: Parents asked of memory per proposal (default 4x ``neighbours``). Options whose
        #: chain does not apply to its parent are skipped at the price of a parse, so a wide
        #: pool costs little and reaches the plain programs the operators apply to, which a
        #: collapsed round's nearest (vectorized, staged) programs are not.
        self.pool = pool if pool is not None else 4 * neighbours
        #: Most (parent, chain) options applied per proposal: each application compiles
        #: its variants, so this bounds the CPU one proposal may spend.
        self.max_options = max_options

    def propose(self, tools: Toolbox, target: TargetState) -> Proposal:
        """The next untried candidate for ``target``, or the reason there is none.

        A mutant equal to a program already in the data or corpus is not new: it is skipped
        (re-using a program is reweighting, which the campaign reports apart).
        """
        parents = _distinct(tools.memory.nearest(target["task"], dict(target["bounds"]),
                                                 k=max(self.pool, self.neighbours)))
        if not parents:
            return Proposal(None, "no verified program of this task to start from")
        # Memory holds what earlier steps and rounds tried: never propose those again.
        tried = set(target["tried"]) | set(tools.memory.gap(target["task"], target["bin"]).tried)
        planned = copies = applied = inapplicable = 0
        # Parents are planned for a group of ``neighbours`` at a time, nearest first; the next
        # group only when this one's applicable options all gave nothing (a plan costs tens of
        # milliseconds, and most targets are done within the nearest group).
        for first in range(0, len(parents), self.neighbours):
            options = self.policy.options(tools, target, parents[first:first + self.neighbours])
            planned += len(options)
            for parent, chain in options:
                key = _key(parent.program_id, chain)
                if key in tried:
                    continue
                if not tools.mutate.applies(parent.source, chain, seed=target["seed"]):
                    inapplicable += 1
                    continue
                if applied >= self.max_options:
                    return Proposal(None, f"the first {self.max_options} untried (parent, "
                                          "chain) options gave no new program")
                applied += 1
                for mutant in tools.mutate.apply(parent.source, chain, seed=target["seed"]):
                    pid = content_hash(mutant.source)
                    if pid in tried:
                        continue
                    if pid in tools.known_ids:
                        copies += 1
                        continue
                    return Proposal(Candidate(program_id=pid, source=mutant.source,
                                              parent_id=parent.program_id,
                                              operators=list(mutant.operators), kind="mutant"))
                tried.add(key)  # this chain yields nothing new from this parent
        if not planned:
            return Proposal(None, "the planner knows no operator chain that moves the "
                                  f"nearest programs toward {target['bin']}")
        why = f"all {planned} planned (parent, chain) options tried"
        if inapplicable:
            why += f" ({inapplicable} do not apply to their parent)"
        if copies:
            why += f"; {copies} mutant(s) were copies of existing programs (reuse, not new)"
        return Proposal(None, why)


def _distinct(parents: list[Neighbour]) -> list[Neighbour]:
    """``parents`` without repeats of one program (memory may hold it once per rollout)."""
    seen: set[str] = set()
    out = []
    for p in parents:
        if p.program_id not in seen:
            seen.add(p.program_id)
            out.append(p)
    return out


def tried_keys(candidate: Candidate) -> list[str]:
    """Keys that mark a candidate as tried (its id and its parent+chain)."""
    return [candidate["program_id"], _key(candidate["parent_id"], candidate["operators"])]


def feedback_of(candidate: Candidate, stage: str, reason: str, landed_bin: str) -> Feedback:
    """Structured feedback for one failed candidate."""
    return Feedback(program_id=candidate["program_id"], parent_id=candidate["parent_id"],
                    operators=list(candidate["operators"]), stage=stage, reason=reason,
                    landed_bin=landed_bin)


def _key(parent_id: str, chain: list[str]) -> str:
    return f"{parent_id}:{'+'.join(chain)}"
