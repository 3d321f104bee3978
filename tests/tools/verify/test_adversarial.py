"""The adversarial suite: every cheating, escaping and emulator-fooling program gets its verdict.

Each program under tests/data/adversarial/cheating/ has a row in
tests/data/adversarial/manifest.yaml, and runs here three times (issue 27, point 3), one layer
at a time, so that each layer is shown to stop what it claims:

1. **the full verifier**: ``check_equivalence`` on the CPU backend -- the path
   ``structcover verify`` takes, anti-hacking checks included -- must give the row's ``reason``;
2. **the sandbox alone**: the text layers off (the anti-hacking checks and the host policy,
   which is only an early, friendly refusal): what is left -- the jailed build and its link
   check, the runner's seccomp filter, the emulator runtime's checks, the fault-injection run
   and the comparison -- must give the row's ``sandbox`` verdict, or accept a ``static_only``
   row (so a layer that starts stopping it shows up here). KernelBench (.py) rows run on the
   KernelBench CPU path with its Python checks off, where the row names a problem; they take
   about 20 s each (two torch children and an extension build), so they are ``slow``, and the
   static-only ones are not run (their rows say why; docs/SANDBOX.md says when each was run);
3. **the text alone**: the hard anti-hacking checks that fail (the row's ``static``, exact), and
   the sandbox's policy reported without running -- the host policy's reasons and the link
   check's verdict on the built object (the row's ``policy``).

Rows with a ``hole`` are cheats every layer passes today: runs 1 and 2 are strict xfails.
docs/SANDBOX.md tabulates which layer stops which class, from these rows.

The other two folders of the suite have tests of their own, stricter for what they test:
escape/ programs run straight into the jail (tests/tools/verify/test_escape.py), past the host
policy and the static checks that would refuse most of them early, asserting that nothing
outside the sandbox changed (files, processes, a listener, the build cache, a later verdict);
emulator/ programs name their task and allowed verdicts in their first lines and run on the
emulator with honest counterparts that must still pass (test_emulator_strict.py).

The seed is fixed so the suite is deterministic in CI; it is not one the verifier used before
(42..46), and the programs cannot know it. One reference cache serves all three runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from structcover.config import VerifySettings
from structcover.schema import TaskSpec, Verdict
from structcover.tools.data.corpus import find_task, load_task
from structcover.tools.verify import hacking_py, select
from structcover.tools.verify.emulator import (
    BuildError,
    LinkRefused,
    build_library,
    prepare_runtime,
)
from structcover.tools.verify.equivalence import ReferenceCache, check_equivalence
from structcover.tools.verify.hacking import hard_failures, run_checks
from structcover.tools.verify.host_policy import check_host_policy
from structcover.tools.verify.rewriter import rewrite
from structcover.tools.verify.select import CpuBackend

ROOT = Path(__file__).resolve().parents[2] / "data" / "adversarial"
KERNELBENCH = Path(__file__).resolve().parents[2] / "data" / "kernelbench" / "problems"
FOLDERS = ("cheating",)
MANIFEST = yaml.safe_load((ROOT / "manifest.yaml").read_text())["programs"]
SEED = 20261201
SETTINGS = VerifySettings(timeout_s=60.0, seed=SEED)
_CACHE = ReferenceCache(max_entries=512)
_OK, _WHY = CpuBackend(SETTINGS).available()
needs_emulator = pytest.mark.skipif(not _OK, reason=f"CPU emulator unavailable: {_WHY}")


def _programs() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for folder in FOLDERS if (ROOT / folder).is_dir()
                  for p in (ROOT / folder).rglob("*") if p.suffix in (".cu", ".py", ".cpp"))


def _cases(paths: list[str]) -> list[Any]:
    """Parameters for ``paths``; a row with a ``hole`` is a strict xfail (it passes today)."""
    return [pytest.param(p, id=p, marks=pytest.mark.xfail(strict=True, reason=MANIFEST[p]["hole"]))
            if "hole" in MANIFEST[p] else pytest.param(p, id=p) for p in paths]


def test_suite_is_large_enough_and_every_program_has_a_row() -> None:
    programs = _programs()
    cheating = [p for p in programs if p.startswith("cheating/")]
    assert len(cheating) >= 20, f"only {len(cheating)} cheating programs"
    missing = [p for p in programs if p not in MANIFEST]
    assert not missing, f"programs without a manifest row: {missing}"
    stale = [p for p in MANIFEST if not (ROOT / p).is_file()]
    assert not stale, f"manifest rows without a program: {stale}"


def test_every_row_says_what_each_layer_does() -> None:
    for path, row in MANIFEST.items():
        assert isinstance(row.get("static"), list), f"{path}: no `static` list (run 3)"
        said = [k for k in ("sandbox", "static_only", "hole") if k in row]
        assert len(said) == 1, f"{path}: needs exactly one of sandbox/static_only/hole: {said}"
        if path.endswith(".py"):  # run 2 needs a KernelBench problem for a `sandbox` row
            assert ("kernelbench" in row) == ("sandbox" in row), f"{path}: kernelbench/sandbox"
        if "static_only" in row:
            # Kept few and justified: nothing the program does at run time can show it.
            assert len(row["static_only"]) > 40, f"{path}: static_only needs its reason"
            assert row["static"], f"{path}: static_only, yet no static check stops it"
    static_only = [p for p, r in MANIFEST.items() if "static_only" in r]
    assert len(static_only) <= len(MANIFEST) // 4, f"too many static-only rows: {static_only}"


def _spec(task: str) -> tuple[TaskSpec, str | None]:
    if task.endswith((".yaml", ".yml")):
        return load_task(ROOT / task), None
    spec, family = find_task(task)
    return spec, family.reference.source


def _verify(path: str, *, checks: bool) -> Verdict:
    row = MANIFEST[path]
    spec, reference = _spec(row["task"])
    if reference is None:
        reference = (ROOT / row["reference"]).read_text()
    return check_equivalence((ROOT / path).read_text(), reference, spec,
                             backend=CpuBackend(SETTINGS), cache=_CACHE, settings=SETTINGS,
                             checks=checks)


def _said(verdict: Verdict) -> str:
    return f"{verdict.failure} | {', '.join(verdict.hacking_flags)} | {verdict.detail}"


@needs_emulator
@pytest.mark.parametrize("path", _cases(sorted(MANIFEST)))
def test_adversarial_program_gets_its_verdict(path: str) -> None:
    """Run 1: the full verifier."""
    row = MANIFEST[path]
    assert row.get("outcome") == "rejected", f"{path}: a cheat or escape must be rejected"
    verdict = _verify(path, checks=True)
    said = _said(verdict)
    assert verdict.equivalent is not True, f"{path} was accepted: {said}"
    assert verdict.seed == SEED
    assert row["reason"] in said, f"{path}: expected {row['reason']!r} in {said!r}"


@needs_emulator
@pytest.mark.parametrize("path", _cases(sorted(p for p in MANIFEST if p.endswith(".cu"))))
def test_sandbox_alone_stops_it_or_the_row_says_static_only(
        path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run 2: anti-hacking checks and host policy off; the run-time layers decide."""
    row = MANIFEST[path]
    monkeypatch.setattr(select, "check_host_policy", lambda source: [])
    verdict = _verify(path, checks=False)
    said = _said(verdict)
    assert verdict.hacking_flags == [], "the anti-hacking checks ran"
    assert "host policy" not in said, "the host policy ran"
    if "static_only" in row:
        assert verdict.equivalent is True, (
            f"{path} is static_only, yet the sandbox stopped it ({said}): record that as its "
            "`sandbox` verdict")
        return
    expected = row.get("sandbox", {})
    assert verdict.equivalent is not True, f"{path} passed the sandbox alone: {said}"
    assert verdict.failure == expected.get("failure"), f"{path}: {said}"
    assert expected.get("reason", "") in verdict.detail, f"{path}: {said}"


@pytest.mark.slow
@pytest.mark.kernelbench
@pytest.mark.parametrize("path", _cases(sorted(p for p, r in MANIFEST.items()
                                               if p.endswith(".py") and "kernelbench" in r)))
def test_kernelbench_sandbox_alone_stops_it(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run 2 for a KernelBench candidate: its Python checks off; the children decide."""
    pytest.importorskip("torch")
    from structcover.tools.kernelbench.problem import resolve_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench

    row = MANIFEST[path]
    monkeypatch.setattr(hacking_py, "run_python_checks", lambda *a, **k: [])
    # Seed 1, as tests/tools/kernelbench use: their cached reference runs are reused.
    verdict = verify_kernelbench((ROOT / path).read_text(),
                                 resolve_problem(row["kernelbench"], KERNELBENCH),
                                 backend="cpu", seed=1)
    said = f"{verdict.failure} | {verdict.detail}"
    assert verdict.equivalent is not True, f"{path} passed the sandbox alone: {said}"
    assert verdict.failure == row["sandbox"]["failure"], f"{path}: {said}"
    assert row["sandbox"]["reason"] in verdict.detail, f"{path}: {said}"


def _sandbox_policy(source: str, spec: TaskSpec) -> str:
    """The sandbox's policy on ``source``, nothing run: host policy and link check reasons.

    The link check reads the object the jailed compiler built (the same build the runs use,
    so it comes from the build cache); a program the rewriter refuses or that does not
    compile is said so, since then there is nothing to link.
    """
    reasons = check_host_policy(source)
    rewritten = rewrite(source, filename=f"{spec.task_id or 'program'}.cu")
    if rewritten.unsupported:
        return "; ".join([*reasons, "rewriter: " + "; ".join(rewritten.unsupported)])
    cache = Path(SETTINGS.cache_dir)
    prepare_runtime(cache)
    try:
        build_library(rewritten.source, cache, timeout_s=120.0)
    except LinkRefused as exc:
        reasons.append(exc.log)
    except BuildError:
        reasons.append("does not compile")
    return "; ".join(reasons)


@needs_emulator
@pytest.mark.parametrize("path", sorted(MANIFEST))
def test_text_alone_gives_its_verdict_and_the_sandbox_policy_is_reported(path: str) -> None:
    """Run 3: the hard checks on the text, and what the policy would refuse, unrun."""
    row = MANIFEST[path]
    source = (ROOT / path).read_text()
    spec, _ = _spec(row["task"])
    failed = sorted(r.name for r in hard_failures(run_checks(source, spec=spec)))
    assert failed == sorted(row["static"]), f"{path}: hard checks {failed}"
    if not path.endswith(".cu"):
        return  # KernelBench candidates have no host policy or link check (their child's jail)
    policy = _sandbox_policy(source, spec)
    if "policy" in row:
        assert row["policy"] in policy, f"{path}: policy says {policy!r}"
    else:
        assert policy == "", f"{path}: the policy refuses it ({policy!r}): record it as `policy`"
