"""The Synthesizer's LLM policy: the model writes the candidate itself.

The prompt is the constrained prompt of ``tools.curation.prompting`` (the target bin rendered
as structural constraints, the task, the launcher signature; for a KernelBench problem its
file, and the answer is a ``ModelNew`` file whose CUDA ``load_inline`` compiles), plus the
verified programs of the task nearest to the bin (memory). On a retry the previous candidate and the Verifier's
structured feedback (stage, reason, the bin it landed in instead) replace the first prompt.

Whenever the model gives nothing usable (a transport failure, a reply without a code block,
an over-long reply, a program already tried or already in the data) the offline
:class:`~structcover.agents.synthesizer.Synthesizer` proposes instead; the fallback and its
reason are counted on the :class:`~structcover.agents.llm.LLMClient`. The Verifier treats an
LLM-written candidate exactly like a mutant.
"""

from __future__ import annotations

import re
from typing import Any

from structcover.agents.llm import LLMClient, LLMReplyError
from structcover.agents.llm_prompts import render
from structcover.agents.ports import Neighbour, Toolbox
from structcover.agents.synthesizer import Proposal, Synthesizer
from structcover.graphs.state import Candidate, TargetState
from structcover.schema import content_hash

AGENT = "synthesizer"
_BLOCK = re.compile(r"```(?:cuda|cu|cpp|c\+\+|c)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_PY_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
#: Characters of each neighbour's source shown to the model (the prompt stays bounded).
_NEIGHBOUR_CHARS = 4000


def extract_kernelbench(reply: Any) -> str:
    """The single Python code block of a reply that defines ``ModelNew`` with CUDA.

    Raises:
        LLMReplyError: No such block.
    """
    text = reply.content if isinstance(reply.content, str) else str(reply.content)
    blocks = [b.strip() for b in _PY_BLOCK.findall(text) if "ModelNew" in b]
    if not blocks:
        raise LLMReplyError("no ```python code block defining ModelNew in the reply")
    source = max(blocks, key=len)
    if "__global__" not in source:
        raise LLMReplyError("the ModelNew file holds no CUDA kernel")
    return source + "\n"


def extract_cuda(reply: Any) -> str:
    """The single CUDA code block of a reply.

    Raises:
        LLMReplyError: No code block, or one without a host launcher.
    """
    text = reply.content if isinstance(reply.content, str) else str(reply.content)
    blocks = [b.strip() for b in _BLOCK.findall(text) if b.strip()]
    if not blocks:
        raise LLMReplyError("no ```cuda code block in the reply")
    source = max(blocks, key=len)
    if "__global__" not in source and "launch" not in source:
        raise LLMReplyError("the code block holds no kernel or launcher")
    return source + "\n"


class LLMSynthesizer:
    """Proposes LLM-written candidates, falling back to the offline Synthesizer."""

    def __init__(self, client: LLMClient, offline: Synthesizer | None = None,
                 specs: dict[str, Any] | None = None, neighbours: int = 2) -> None:
        self.client = client
        self.offline = offline or Synthesizer()
        self.neighbours = neighbours
        self._specs = specs

    @property
    def specs(self) -> dict[str, Any]:
        """Task specs by task id (the shipped corpus unless given)."""
        if self._specs is None:
            from structcover.tools.data.corpus import load_corpus

            self._specs = {t.task_id: t for f in load_corpus() for t in f.tasks}
        return self._specs

    def propose(self, tools: Toolbox, target: TargetState) -> Proposal:
        """An LLM-written candidate for ``target``, else the offline proposal."""
        spec = self.specs.get(target["task"])
        if spec is None:
            self.client.fallback(AGENT, "task has no spec to prompt with")
            return self.offline.propose(tools, target)
        try:
            messages = self.messages(tools, target, spec)
        except (ValueError, KeyError) as exc:
            self.client.fallback(AGENT, f"cannot render the prompt: {str(exc)[:100]}")
            return self.offline.propose(tools, target)
        extract = extract_kernelbench if spec.kind == "kernelbench" else extract_cuda
        source = self.client.call(AGENT, messages, extract)
        if source is None:
            return self.offline.propose(tools, target)
        pid = content_hash(source)
        tried = set(target["tried"]) | set(tools.memory.gap(target["task"], target["bin"]).tried)
        if pid in tried or pid in tools.known_ids:
            self.client.fallback(AGENT, "reply repeats a tried or existing program")
            return self.offline.propose(tools, target)
        return Proposal(Candidate(program_id=pid, source=source, parent_id="",
                                  operators=[], kind="llm"))

    def messages(self, tools: Toolbox, target: TargetState, spec: Any) -> list[Any]:
        """System + user message for the first attempt or a retry."""
        from langchain_core.messages import HumanMessage, SystemMessage

        from structcover.tools.coverage.labels import parse_bin_label
        from structcover.tools.curation import prompting

        bounds = parse_bin_label(target["bin"])
        cand = target.get("candidate")
        if target["feedback"] and cand is not None:
            lines = [_feedback_line(f) for f in target["feedback"][-3:]]
            user = prompting.render_retry_lines(spec, bounds, cand["source"].strip(), lines)
        else:
            user = prompting.render_generate(spec, bounds)
            near = tools.memory.nearest(target["task"], dict(target["bounds"]),
                                        k=self.neighbours)
            if near:
                user += render("synthesizer_neighbours", programs=_programs(near))
        return [SystemMessage(render("synthesizer_system")), HumanMessage(user)]


def _feedback_line(f: Any) -> str:
    where = f" (landed in bin {f['landed_bin']})" if f.get("landed_bin") else ""
    return f"{f['stage']} failed{where}: {f['reason']}"


def _programs(near: list[Neighbour]) -> str:
    out = []
    for n in near:
        levels = ", ".join(f"{k.split('.', 1)[-1]}={v}" for k, v in sorted(n.features.items())
                           if k.startswith("pattern.") and isinstance(v, str))
        fence = "python" if "ModelNew" in n.source else "cuda"  # a KernelBench candidate
        out.append(f"### {n.program_id} ({levels})\n```{fence}\n"
                   f"{n.source.strip()[:_NEIGHBOUR_CHARS]}\n```")
    return "\n\n".join(out)
