"""The Verifier: is a candidate new, and does the verification pipeline accept it for its bin?

Stages: novelty (a copy of a program already in the data or corpus never fills a bin) ->
the pipeline's compile -> structure check (did it land in the target bin?) -> anti-hacking
-> equivalence -> profile where a GPU is present. A candidate that lands in another empty bin
of the task that no other target of the step aims at (``TargetState.also``) is verified for
that bin instead and fills it: the structure is what was asked of the campaign, just not of
this target. A failure comes back as a verdict naming
the stage and reason, which the graph hands to the Synthesizer for the next attempt.
The policy seam decides whether a verdict is final or worth a retry.
"""

from __future__ import annotations

from typing import Protocol

from structcover.agents.ports import Toolbox
from structcover.graphs.state import Candidate, TargetState, Verdict

#: Stages after which another candidate for the same bin will not help.
_FINAL_STAGES = ("no-candidate",)


class RetryPolicy(Protocol):
    """Whether a failed target gets another attempt."""

    def retry(self, target: TargetState, verdict: Verdict) -> bool:
        """True to send the target back to the Synthesizer."""


class BoundedRetry:
    """Retry while the target's candidate allowance lasts."""

    def retry(self, target: TargetState, verdict: Verdict) -> bool:
        """Retry while ``used < allowance`` and the failure is not final."""
        return (not verdict["ok"] and verdict["stage"] not in _FINAL_STAGES
                and target["used"] < target["allowance"])


class Verifier:
    """Checks candidates through the verification tool."""

    def __init__(self, policy: RetryPolicy | None = None) -> None:
        self.policy = policy or BoundedRetry()

    def check(self, tools: Toolbox, target: TargetState, candidate: Candidate) -> Verdict:
        """The verdict for ``candidate`` against ``target``'s bin."""
        if candidate["program_id"] in tools.known_ids:
            return Verdict(ok=False, stage="novelty", landed_bin="", backend="", checks=[],
                           reason="a copy of a program already in the data or corpus: "
                                  "re-using it is reweighting, not a new program",
                           features={}, gpu_seconds=0.0)
        verdict = tools.verify.verify(candidate["source"], target["task"], target["bin"])
        landed = verdict["landed_bin"]
        if not verdict["ok"] and verdict["stage"] == "structure" and \
                landed in target.get("also", []):
            # It missed its bin but landed in another empty one of the task: verify it for
            # that bin (anti-hacking, equivalence) and let it fill that one instead.
            verdict = tools.verify.verify(candidate["source"], target["task"], landed)
            if verdict["ok"] and verdict["landed_bin"] == landed:
                return verdict
        if verdict["ok"] and verdict["landed_bin"] != target["bin"]:
            # The pipeline must not accept a program outside the bin; guard anyway.
            verdict = Verdict(**{**verdict, "ok": False, "stage": "structure",
                                 "reason": f"landed in bin {verdict['landed_bin']} instead "
                                           f"of {target['bin']}"})
        return verdict

    def retry(self, target: TargetState, verdict: Verdict) -> bool:
        """Whether the target goes back to the Synthesizer."""
        return self.policy.retry(target, verdict)
