"""The LLM policies inside the campaign graph on the fake world, with a fake tool-calling chat
model fed canned replies: the Synthesizer's program is verified and added, a retry carries
the Verifier's feedback, the Diagnoser's tool calls reorder the gaps (never invent one), and
unusable replies fall back to the offline policies."""

from __future__ import annotations

from typing import Any

import pytest
from campaign_fakes import world
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult

from structcover.agents.diagnoser import Diagnoser
from structcover.agents.llm import LLMClient, LLMConfig
from structcover.agents.llm_diagnoser import LLMDiagnosisPolicy
from structcover.agents.llm_synthesizer import LLMSynthesizer
from structcover.graphs.campaign import CampaignContext, Limits, compile_graph
from structcover.schema import content_hash


class ToolChat(GenericFakeChatModel):
    """GenericFakeChatModel raises on bind_tools; this one ignores the tools and keeps every
    prompt it was sent."""

    seen: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolChat:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _client(*replies: AIMessage) -> tuple[LLMClient, ToolChat]:
    model = ToolChat(messages=iter(replies), seen=[])
    return LLMClient(model, LLMConfig(base_url="http://fake/v1")), model


def _code(body: str) -> AIMessage:
    return AIMessage(f"```cuda\n{body}\n__global__ void k() {{}}\n```")


def _specs() -> dict[str, Any]:
    from structcover.tools.data.corpus import load_corpus

    spec = next(t for f in load_corpus() for t in f.tasks if t.task_id == "saxpy")
    return {"t1": spec, "t2": spec}


def _run(ctx: CampaignContext) -> dict[str, Any]:
    return compile_graph().invoke({}, {"max_concurrency": 1}, context=ctx)


def _gap_key(prompt: str, task: str, bin_: str) -> str:
    line = next(ln for ln in prompt.splitlines() if f": {task} / {bin_} " in ln)
    return line.split(":")[0].removeprefix("- ")


def test_llm_program_is_verified_and_added() -> None:
    tools, memory, verify = world(("t1",))
    written = "// task=t1 reuse=smem sync=none by-the-model"
    client, model = _client(_code(written))
    ctx = CampaignContext(tools=tools, limits=Limits(budget=1, target_scov=1.0),
                          diagnoser=Diagnoser(policy=_Only("t1", "reuse=smem|sync=none")),
                          synthesizer=LLMSynthesizer(client, specs=_specs()))
    out = _run(ctx)
    pid = content_hash(f"{written}\n__global__ void k() {{}}\n")
    assert [p["program_id"] for p in out["added"]] == [pid]
    assert verify.calls == [pid]
    prompt = model.seen[0][1].content
    assert "Structural constraints" in prompt and "Verified programs of this task" in prompt
    u = client.summary()["agents"]["synthesizer"]
    assert u["ok"] == 1 and u["fallbacks"] == 0


def test_retry_reads_the_verifiers_feedback() -> None:
    tools, memory, verify = world(("t1",))
    wrong = "// task=t1 reuse=smem sync=block first-try"  # a bin t1 already covers
    right = "// task=t1 reuse=smem sync=none second-try"
    client, model = _client(_code(wrong), _code(right))
    ctx = CampaignContext(tools=tools, limits=Limits(budget=2, target_scov=1.0,
                                                     targets_per_step=1),
                          diagnoser=Diagnoser(policy=_Only("t1", "reuse=smem|sync=none")),
                          synthesizer=LLMSynthesizer(client, specs=_specs()))
    out = _run(ctx)
    assert out["added"][0]["source"].startswith(right)
    retry = model.seen[1][1].content
    assert "first-try" in retry  # the previous program
    assert "structure failed (landed in bin reuse=smem|sync=block)" in retry


def test_a_candidate_landing_in_another_open_bin_fills_that_bin() -> None:
    tools, memory, verify = world(("t1",))
    elsewhere = "// task=t1 reuse=reg sync=block lands-elsewhere"  # an empty bin of t1
    client, model = _client(_code(elsewhere))
    ctx = CampaignContext(tools=tools, limits=Limits(budget=1, target_scov=1.0,
                                                     targets_per_step=1),
                          diagnoser=Diagnoser(policy=_Only("t1", "reuse=smem|sync=none")),
                          synthesizer=LLMSynthesizer(client, specs=_specs()))
    out = _run(ctx)
    pid = content_hash(f"{elsewhere}\n__global__ void k() {{}}\n")
    assert [(p["program_id"], p["bin"]) for p in out["added"]] == [(pid, "reuse=reg|sync=block")]
    assert verify.calls == [pid, pid]  # checked for its target, then for the bin it reached
    there, here = memory.gap("t1", "reuse=reg|sync=block"), memory.gap("t1", "reuse=smem|sync=none")
    assert (there.status, there.filled_by) == ("filled", pid)
    assert here.status == "open" and here.last_stage == "structure"
    assert "filled that open bin" in here.last_reason


class _Only:
    """Offline order with one gap first (a stable target for the retry test)."""

    def __init__(self, task: str, bin_: str) -> None:
        self.key = (task, bin_)

    def order(self, gaps):  # type: ignore[no-untyped-def]
        return sorted(gaps, key=lambda g: ((g["task"], g["bin"]) != self.key, g["task"],
                                           g["bin"]))


def test_diagnoser_tool_calls_reorder_within_the_reported_gaps() -> None:
    tools, _, _ = world(("t1",))
    gaps = tools.coverage.gaps([])
    want = ("t1", "reuse=none|sync=block")
    listing = LLMDiagnosisPolicy(_client()[0]).offline.order(gaps)
    opened = [g for g in listing if g["status"] == "open"]
    key = f"G{[(g['task'], g['bin']) for g in opened].index(want) + 1}"
    client, model = _client(
        AIMessage("", tool_calls=[{"name": "gap_details", "args": {"key": key}, "id": "a"}]),
        AIMessage("", tool_calls=[{"name": "choose_targets", "id": "b", "args": {
            "keys": [key, "G999"], "rationale": "block sync is one operator away"}}]))
    policy = LLMDiagnosisPolicy(client)
    ordered = policy.order(gaps)
    assert (ordered[0]["task"], ordered[0]["bin"]) == want
    assert sorted(map(id, ordered)) == sorted(map(id, gaps))  # nothing invented or lost
    assert "reuse=none|sync=block" in model.seen[1][-1].content  # the tool's answer
    assert client.summary()["rationales"]["diagnoser"] == ["block sync is one operator away"]
    # the same gaps again: the choice is cached, no new request
    assert policy.order(gaps) == ordered
    assert len(model.seen) == 2


def test_unusable_replies_fall_back_to_offline() -> None:
    tools, _, _ = world(("t1",))
    client, _ = _client(*[AIMessage("sorry, no code")] * 8)
    ctx = CampaignContext(tools=tools, limits=Limits(budget=3, target_scov=1.0),
                          diagnoser=Diagnoser(policy=_Only("t1", "reuse=smem|sync=none")),
                          synthesizer=LLMSynthesizer(client, specs=_specs()))
    out = _run(ctx)
    assert out["verified"] >= 1  # offline mutants filled bins
    reasons = client.summary()["agents"]["synthesizer"]["reasons"]
    assert reasons == {"unusable reply: no ```cuda code block in the reply":
                       client.summary()["agents"]["synthesizer"]["fallbacks"]}
    client, _ = _client(AIMessage("", invalid_tool_calls=[{
        "name": "choose_targets", "args": "{bad", "id": "x", "error": "bad json",
        "type": "invalid_tool_call"}]))
    policy = LLMDiagnosisPolicy(client)
    gaps = tools.coverage.gaps([])
    assert policy.order(gaps) == policy.offline.order(gaps)
    assert any("malformed tool-call arguments" in r
               for r in client.summary()["agents"]["diagnoser"]["reasons"])


def test_a_kernelbench_task_is_prompted_with_its_problem_and_answered_with_model_new(
        tmp_path) -> None:  # noqa: ANN001
    from structcover.schema import TaskSpec

    problem = tmp_path / "19_ReLU.py"
    problem.write_text("class Model(nn.Module):\n    def forward(self, x):\n"
                       "        return torch.relu(x)\n")
    spec = TaskSpec(task_id="t1", kind="kernelbench", problem=str(problem), args=[], sizes={},
                    family="kernelbench")
    tools, memory, verify = world(("t1",))
    body = ('# task=t1 reuse=smem sync=none\nclass ModelNew(nn.Module):\n'
            '    pass\ncuda = "__global__ void relu(float* x) {}"')
    client, model = _client(AIMessage(f"```python\n{body}\n```"))
    ctx = CampaignContext(tools=tools, limits=Limits(budget=1, target_scov=1.0),
                          diagnoser=Diagnoser(policy=_Only("t1", "reuse=smem|sync=none")),
                          synthesizer=LLMSynthesizer(client, specs={"t1": spec}))
    out = _run(ctx)
    prompt = model.seen[0][1].content
    assert "return torch.relu(x)" in prompt  # the problem file itself
    assert "ModelNew" in prompt and "load_inline" in prompt and "```python" in prompt
    assert "extern \"C\" int launch" not in prompt  # not the corpus's .cu launcher
    assert [p["source"] for p in out["added"]] == [body + "\n"]
    u = client.summary()["agents"]["synthesizer"]
    assert u["ok"] == 1 and u["fallbacks"] == 0


def test_a_kernelbench_reply_needs_a_model_new_file_with_a_kernel() -> None:
    from structcover.agents.llm import LLMReplyError
    from structcover.agents.llm_synthesizer import extract_kernelbench

    with pytest.raises(LLMReplyError, match="ModelNew"):
        extract_kernelbench(_code("// a .cu answer to a KernelBench prompt"))
    with pytest.raises(LLMReplyError, match="no CUDA kernel"):
        extract_kernelbench(AIMessage("```python\nclass ModelNew:\n    pass\n```"))


def test_attach_llm_gives_the_synthesizer_the_campaigns_kernelbench_problems(tmp_path) -> None:  # noqa: ANN001
    from types import SimpleNamespace

    from structcover.agents.llm_setup import attach_llm
    from structcover.config import load_settings
    from structcover.schema import TaskSpec

    pytest.importorskip("langchain_openai")
    kb = TaskSpec(task_id="19_ReLU", kind="kernelbench", problem=str(tmp_path / "p.py"),
                  args=[], sizes={}, family="kernelbench")
    corpus = _specs()["t1"]
    tools = SimpleNamespace(verify=SimpleNamespace(specs={"19_ReLU": kb, "saxpy": corpus}))
    prep = SimpleNamespace(context=CampaignContext(tools=tools),  # type: ignore[arg-type]
                           llm=None)
    attach_llm(prep, SimpleNamespace(llm_url="http://127.0.0.1:9/v1", llm_model="m"),
               load_settings())
    specs = prep.context.synthesizer.specs
    assert specs["19_ReLU"] is kb and specs["saxpy"].kind != "kernelbench"
    assert isinstance(prep.context.synthesizer, LLMSynthesizer)
