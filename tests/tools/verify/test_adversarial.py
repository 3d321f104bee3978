"""The adversarial suite: every cheating, escaping and emulator-fooling program gets its verdict.

Each program under tests/data/adversarial/cheating/ has a row in
tests/data/adversarial/manifest.yaml (task, expected outcome, a reason substring). This test
runs each through ``check_equivalence`` on the CPU backend -- the path ``structcover verify``
takes, anti-hacking checks included -- and asserts the row.

The other two folders of the suite have tests of their own, stricter for what they test:
escape/ programs run straight into the jail (tests/tools/verify/test_escape.py), past the host
policy and the static checks that would refuse most of them early, asserting that nothing
outside the sandbox changed (files, processes, a listener, the build cache, a later verdict);
emulator/ programs name their task and allowed verdicts in their first lines and run on the
emulator with honest counterparts that must still pass (test_emulator_strict.py).

The seed is fixed so the suite is deterministic in CI; it is not one the verifier used before
(42..46), and the programs cannot know it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from structcover.config import VerifySettings
from structcover.tools.data.corpus import find_task, load_task
from structcover.tools.verify.equivalence import ReferenceCache, check_equivalence
from structcover.tools.verify.select import CpuBackend

ROOT = Path(__file__).resolve().parents[2] / "data" / "adversarial"
FOLDERS = ("cheating",)
MANIFEST = yaml.safe_load((ROOT / "manifest.yaml").read_text())["programs"]
SEED = 20261201
SETTINGS = VerifySettings(timeout_s=60.0, seed=SEED)
_CACHE = ReferenceCache(max_entries=512)
_OK, _WHY = CpuBackend(SETTINGS).available()


def _programs() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for folder in FOLDERS if (ROOT / folder).is_dir()
                  for p in (ROOT / folder).rglob("*") if p.suffix in (".cu", ".py", ".cpp"))


def test_suite_is_large_enough_and_every_program_has_a_row() -> None:
    programs = _programs()
    cheating = [p for p in programs if p.startswith("cheating/")]
    assert len(cheating) >= 20, f"only {len(cheating)} cheating programs"
    missing = [p for p in programs if p not in MANIFEST]
    assert not missing, f"programs without a manifest row: {missing}"
    stale = [p for p in MANIFEST if not (ROOT / p).is_file()]
    assert not stale, f"manifest rows without a program: {stale}"


def _spec(task: str):
    if task.endswith((".yaml", ".yml")):
        return load_task(ROOT / task), None
    spec, family = find_task(task)
    return spec, family.reference.source


@pytest.mark.skipif(not _OK, reason=f"CPU emulator unavailable: {_WHY}")
@pytest.mark.parametrize("path", sorted(MANIFEST), ids=str)
def test_adversarial_program_gets_its_verdict(path: str) -> None:
    row = MANIFEST[path]
    assert row.get("outcome") == "rejected", f"{path}: a cheat or escape must be rejected"
    spec, reference = _spec(row["task"])
    if reference is None:
        reference = (ROOT / row["reference"]).read_text()
    source = (ROOT / path).read_text()
    verdict = check_equivalence(source, reference, spec, backend=CpuBackend(SETTINGS),
                                cache=_CACHE, settings=SETTINGS)
    said = f"{verdict.failure} | {', '.join(verdict.hacking_flags)} | {verdict.detail}"
    assert verdict.equivalent is not True, f"{path} was accepted: {said}"
    assert verdict.seed == SEED
    assert row["reason"] in said, f"{path}: expected {row['reason']!r} in {said!r}"
