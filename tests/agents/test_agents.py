"""Diagnoser, Synthesizer, Verifier and the memory recorder on the fake world."""

from __future__ import annotations

from campaign_fakes import FakePlanner, feats, src, world

from structcover.agents.diagnoser import Diagnoser
from structcover.agents.ports import GapMemory
from structcover.agents.recorder import record_result
from structcover.agents.synthesizer import Synthesizer, feedback_of
from structcover.agents.verifier import Verifier
from structcover.graphs.state import TargetResult, TargetState, Verdict
from structcover.schema import content_hash


def _target(task: str = "t1", bin_: str = "reuse=smem|sync=none", **kw) -> TargetState:
    bounds = dict(p.split("=") for p in bin_.split("|"))
    base = TargetState(task=task, bin=bin_, bounds=bounds, seed=7, allowance=3, used=0, tried=[],
                       feedback=[], candidate=None, verdict=None, no_candidate="", result=None)
    return TargetState(**{**base, **kw})


# Diagnoser -----------------------------------------------------------------------------------

def test_diagnoser_orders_gaps_and_skips_infeasible() -> None:
    tools, memory, _ = world()
    d = Diagnoser().diagnose(tools, [])
    assert d.f_star == ["reuse", "sync"]
    # Within a task, highest priority first; across tasks, in turn: the k-th gap of every
    # task comes before any task's (k+1)-th (SCov is a mean over tasks).
    # Bins another task reaches (demonstrated) come first within a task.
    tasks = {g["task"] for g in d.gaps}
    missing = {b: sum(g["bin"] == b for g in d.gaps) for b in {g["bin"] for g in d.gaps}}
    for task in tasks:
        keys = [(missing[g["bin"]] == len(tasks), -g["priority"], g["bin"])
                for g in d.gaps if g["task"] == task]
        assert keys == sorted(keys)
    rank: dict[str, int] = {}
    ranks = []
    for g in d.gaps:
        ranks.append(rank.get(g["task"], 0))
        rank[g["task"]] = ranks[-1] + 1
    assert ranks == sorted(ranks) and len(rank) >= 2
    assert d.gaps[0]["bin"].endswith("sync=warp")
    contradiction = [g for g in d.gaps if g["bin"] == "reuse=reg|sync=warp"]
    assert all(g["status"] == "infeasible" for g in contradiction)
    assert all(g["status"] != "infeasible" for g in Diagnoser().remaining(d.gaps))


def test_diagnoser_puts_a_bin_another_task_reaches_first() -> None:
    from structcover.agents.diagnoser import OfflineDiagnosisPolicy

    def gap(task: str, bin: str, priority: float) -> dict:
        return {"task": task, "bin": bin, "priority": priority}

    # Task b reaches bin "x" (it is not among b's gaps); task a lacks it, and lacks "y", which
    # no task reaches and the pooled diagnosis ranks higher.
    gaps = [gap("a", "x", 1.0), gap("a", "y", 2.0), gap("b", "y", 2.0), gap("b", "z", 1.5),
            gap("a", "z", 1.5)]
    order = [(g["task"], g["bin"]) for g in OfflineDiagnosisPolicy().order(gaps)]  # type: ignore[arg-type]
    assert order[:2] == [("a", "x"), ("b", "y")]  # first gap of each task, in turn
    assert order[2:] == [("a", "y"), ("b", "z"), ("a", "z")]


def test_diagnoser_reads_memory_proofs_and_history() -> None:
    tools, memory, _ = world()
    memory.gaps[("t1", "reuse=none|sync=warp")] = GapMemory(
        status="infeasible", failures=["a", "b", "c"], proof="3 targeted attempts failed")
    memory.gaps[("t2", "reuse=none|sync=block")] = GapMemory(failures=["x differs"])
    memory.gaps[("t2", "reuse=smem|sync=none")] = GapMemory(
        last_stage="no-candidate", last_reason="no chain")
    diag = Diagnoser(max_failures=3)
    gaps = {(g["task"], g["bin"]): g for g in diag.diagnose(tools, []).gaps}
    g = gaps[("t1", "reuse=none|sync=warp")]
    assert g["status"] == "infeasible" and "3 targeted attempts failed" in g["reasons"][-1]
    assert gaps[("t2", "reuse=none|sync=block")]["failures"] == 1
    assert "last: x differs" in gaps[("t2", "reuse=none|sync=block")]["reasons"][-1]
    assert gaps[("t2", "reuse=smem|sync=none")]["failures"] == 3
    left = {(g["task"], g["bin"]) for g in diag.remaining(list(gaps.values()))}
    assert ("t1", "reuse=none|sync=warp") not in left
    assert ("t2", "reuse=smem|sync=none") not in left
    assert ("t2", "reuse=none|sync=block") in left


# Synthesizer ---------------------------------------------------------------------------------

def test_synthesizer_mutates_the_nearest_parent_toward_the_bin() -> None:
    tools, _, _ = world()
    prop = Synthesizer().propose(tools, _target())
    cand = prop.candidate
    assert cand is not None and cand["kind"] == "mutant"
    assert feats(cand["source"]) == {"reuse": "smem", "sync": "none"}
    assert cand["operators"] == ["to_smem"]
    assert cand["parent_id"] == content_hash(src("t1", "none", "none"))
    assert cand["program_id"] == content_hash(cand["source"])
    assert cand["program_id"] not in tools.known_ids


def test_synthesizer_never_repeats_what_memory_tried() -> None:
    tools, memory, _ = world()
    first = Synthesizer().propose(tools, _target()).candidate
    assert first is not None
    memory.record_attempt("t1", "reuse=smem|sync=none",
                          {**feedback_of(first, "equivalence", "differs", "")}, 0)
    second = Synthesizer().propose(tools, _target()).candidate
    assert second is not None and second["program_id"] != first["program_id"]


class _TwoChains(FakePlanner):
    def plan(self, features, bounds, *, seed, k, family="", operators=None, first_steps=None):  # type: ignore[no-untyped-def]
        return [["to_warp"], ["add_block_sync", "to_warp"]][:k]


def test_feedback_pushes_chains_with_a_failing_operator_back() -> None:
    tools, _, _ = world()
    tools.planner = _TwoChains()
    target = _target(bin_="reuse=none|sync=warp")
    first = Synthesizer().propose(tools, target).candidate
    assert first is not None and first["operators"] == ["to_warp"]
    fb = feedback_of(first, "equivalence", "3 outputs differ", "")
    # with feedback against to_warp, every chain holds it: both rank last, order kept
    nxt = Synthesizer().propose(tools, _target(bin_="reuse=none|sync=warp", feedback=[fb],
                                               tried=[first["program_id"]])).candidate
    assert nxt is not None and nxt["program_id"] != first["program_id"]


def test_copies_of_existing_programs_are_not_new() -> None:
    tools, _, _ = world()
    target = _target()
    copies = {content_hash(m.source)
              for n in tools.memory.nearest("t1", target["bounds"], k=3)
              for chain in tools.planner.plan(n.features, target["bounds"], seed=0, k=4)
              for m in tools.mutate.apply(n.source, chain, seed=0)}
    assert copies
    tools.known_ids = tools.known_ids | copies
    prop = Synthesizer().propose(tools, target)
    assert prop.candidate is None and "copies of existing programs" in prop.reason


class _OnlyPlainParents:
    """A mutate port whose chains apply only to a parent tagged ``plain`` (as the thread
    mapping operators apply only to one-thread-per-element kernels); counts compiles."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.applied = inner, 0

    def applicable(self, source):  # type: ignore[no-untyped-def]
        return self.inner.applicable(source)  # every operator "applies"; its chains do not

    def first_steps(self, source):  # type: ignore[no-untyped-def]
        return None

    def applies(self, source, chain, *, seed):  # type: ignore[no-untyped-def]
        return "plain" in source

    def apply(self, source, chain, *, seed):  # type: ignore[no-untyped-def]
        self.applied += 1
        return self.inner.apply(source, chain, seed=seed) if "plain" in source else []


def test_options_that_do_not_apply_cost_no_attempt_and_farther_parents_are_reached() -> None:
    tools, memory, _ = world(("t1",))
    # the nearest programs (none/none and three more) are not "plain"; the plain one is
    # farthest, past the first group of parents the synthesizer plans for
    for i in range(3):
        s = src("t1", "none", "none", f"vectorized-{i}")
        memory.add_program({"task": "t1", "program_id": content_hash(s), "source": s}, 0)
    plain = src("t1", "reg", "block", "plain")
    memory.add_program({"task": "t1", "program_id": content_hash(plain), "source": plain}, 0)
    tools.mutate = _OnlyPlainParents(tools.mutate)
    prop = Synthesizer(neighbours=2, max_options=1, pool=8).propose(tools, _target())
    assert prop.candidate is not None and prop.candidate["parent_id"] == content_hash(plain)
    assert tools.mutate.applied == 1  # only the option that applies was applied
    # with the pool limited to the nearest group, nothing applies: no attempt is spent
    tools.mutate.applied = 0
    none = Synthesizer(neighbours=2, max_options=1, pool=2).propose(tools, _target())
    assert none.candidate is None and "do not apply to their parent" in none.reason
    assert tools.mutate.applied == 0


class _CountingPlanner(FakePlanner):
    def __init__(self) -> None:
        self.asked: list[frozenset[str] | None] = []

    def plan(self, features, bounds, *, seed, k, family="", operators=None, first_steps=None):  # type: ignore[no-untyped-def]
        self.asked.append(operators)
        return super().plan(features, bounds, seed=seed, k=k, family=family)


class _NothingApplies(_OnlyPlainParents):
    def applicable(self, source):  # type: ignore[no-untyped-def]
        return frozenset({"to_smem"}) if "plain" in source else frozenset()

    def first_steps(self, source):  # type: ignore[no-untyped-def]
        return None  # landings unknown: the planner predicts every step


def test_parents_are_planned_only_with_the_operators_that_apply_to_them() -> None:
    tools, memory, _ = world(("t1",))
    tools.planner, tools.mutate = _CountingPlanner(), _NothingApplies(tools.mutate)
    prop = Synthesizer(neighbours=3, pool=3).propose(tools, _target())
    assert prop.candidate is None and "knows no operator chain" in prop.reason
    assert tools.planner.asked == []  # nothing applies to any parent: no plan at all
    plain = src("t1", "none", "none", "plain")
    memory.add_program({"task": "t1", "program_id": content_hash(plain), "source": plain}, 0)
    prop = Synthesizer(neighbours=8, pool=8).propose(tools, _target())
    assert prop.candidate is not None and prop.candidate["operators"] == ["to_smem"]
    assert tools.planner.asked == [frozenset({"to_smem"})]


def test_no_parent_no_candidate() -> None:
    tools, _, _ = world()
    prop = Synthesizer().propose(tools, _target(task="unknown"))
    assert prop.candidate is None and "no verified program" in prop.reason


# Verifier ------------------------------------------------------------------------------------

def test_verifier_rejects_copies_and_wrong_bins_and_bounds_retries() -> None:
    tools, _, verify = world()
    v = Verifier()
    known = next(iter(tools.known_ids))
    copy = {"program_id": known, "source": "x", "parent_id": "", "operators": [],
            "kind": "mutant"}
    verdict = v.check(tools, _target(), copy)  # type: ignore[arg-type]
    assert not verdict["ok"] and verdict["stage"] == "novelty" and verify.calls == []
    wrong = src("t1", "reg", "none", "new")
    cand = {"program_id": content_hash(wrong), "source": wrong, "parent_id": "p",
            "operators": ["to_reg"], "kind": "mutant"}
    verdict = v.check(tools, _target(), cand)  # type: ignore[arg-type]
    assert verdict["stage"] == "structure" and verdict["landed_bin"] == "reuse=reg|sync=none"
    assert v.retry(_target(used=1, allowance=3), verdict)
    assert not v.retry(_target(used=3, allowance=3), verdict)
    ok = Verdict(ok=True, stage="ok", reason="", landed_bin="", backend="", checks=[],
                 features={}, gpu_seconds=0.0)
    assert not v.retry(_target(used=1), ok)


def test_verifier_lets_a_candidate_fill_another_open_bin_it_landed_in() -> None:
    tools, _, verify = world()
    elsewhere = src("t1", "reg", "block", "new")
    cand = {"program_id": content_hash(elsewhere), "source": elsewhere, "parent_id": "p",
            "operators": ["to_reg"], "kind": "mutant"}
    target = _target(also=["reuse=reg|sync=block"])
    verdict = Verifier().check(tools, target, cand)  # type: ignore[arg-type]
    assert verdict["ok"] and verdict["landed_bin"] == "reuse=reg|sync=block"
    assert verify.calls == [cand["program_id"]] * 2  # its own bin, then the one it reached
    # a bin no longer open (not in ``also``) is a plain structure failure
    verdict = Verifier().check(tools, _target(also=["reuse=none|sync=warp"]), cand)  # type: ignore[arg-type]
    assert not verdict["ok"] and verdict["stage"] == "structure"


# recorder ------------------------------------------------------------------------------------

def test_failed_attempts_become_an_infeasibility_proof_once() -> None:
    tools, memory, _ = world()
    fbs = [{"program_id": f"c{i}", "parent_id": "p", "operators": ["to_warp"],
            "stage": "equivalence", "reason": f"{i} outputs differ", "landed_bin": ""}
           for i in range(3)]
    res = TargetResult(task="t1", bin="reuse=none|sync=warp", outcome="failed", used=3,
                       attempts=fbs[:2], program=None, gpu_seconds=0.0, note="")
    record_result(tools, res, 0, max_failures=3)
    assert memory.gap("t1", "reuse=none|sync=warp").status == "open"
    record_result(tools, res, 0, max_failures=3)  # a replay writes nothing new
    assert len(memory.gap("t1", "reuse=none|sync=warp").failures) == 2
    record_result(tools, {**res, "attempts": fbs}, 0, max_failures=3)
    g = memory.gap("t1", "reuse=none|sync=warp")
    assert g.status == "infeasible" and "3 targeted attempts failed" in g.proof
    assert "2 outputs differ" in g.proof
    assert [o for o in memory.operators if o[0] == "to_warp" and not o[1]]


def test_filled_result_stores_the_program() -> None:
    tools, memory, _ = world()
    s = src("t1", "smem", "none", "new")
    prog = {"program_id": content_hash(s), "task": "t1", "bin": "reuse=smem|sync=none",
            "parent_id": "p", "operators": ["to_smem"], "source": s, "features": {},
            "backend": "fake", "checks": ["equivalence"]}
    res = TargetResult(task="t1", bin=prog["bin"], outcome="filled", used=1, attempts=[],
                       program=prog, gpu_seconds=0.0, note="")
    record_result(tools, res, 0, max_failures=3)
    record_result(tools, res, 0, max_failures=3)
    assert memory.gap("t1", prog["bin"]).status == "filled"
    assert [pid for pid, _ in memory.programs["t1"]].count(prog["program_id"]) == 1
