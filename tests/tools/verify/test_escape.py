"""Escape programs (tests/data/adversarial/escape/): each tries one way out of the sandbox.

They run through ``jailed_cpu.run_many`` directly, past the host policy (which is only an
early, friendly refusal) and with the link check off: the jail itself must hold. Every test asserts the verdict and that
nothing outside changed: marker files, planted files, a loopback listener, leftover
processes, the build cache (every entry matches its seal) and a later verdict.

That is the sandbox alone (run 2 of issue 27 point 3). ``test_full_verifier_and_text_layers``
adds the other two runs for every program: the full verifier (``check_equivalence`` with every
layer on; nothing outside may change either) and the text alone (the hard anti-hacking checks
and whether the host policy refuses it, from the same verdict).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from structcover.config import VerifySettings
from structcover.tools.verify import buildcache, jailed_cpu, link_check
from structcover.tools.verify.backend import RunResult
from structcover.tools.verify.emulator import build_library
from structcover.tools.verify.equivalence import check_equivalence
from structcover.tools.verify.host_policy import check_host_policy
from structcover.tools.verify.jail import jail_status
from structcover.tools.verify.rewriter import rewrite
from structcover.tools.verify.select import CpuBackend

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import needs_cxx, session_cache, spec_of

ESCAPES = Path(__file__).parents[2] / "data" / "adversarial" / "escape"
N = 1000
SPEC = spec_of("escape", [("x", ["N"], "input"), ("y", ["N"], "output")], [("n", "N")],
               sizes={"N": N})
GOOD = (ESCAPES / "python_capi.cu").read_text().replace("@MARKER@", "/nonexistent/m")

pytestmark = [needs_cxx, pytest.mark.skipif(not jail_status()[0],
                                            reason=f"no jail here: {jail_status()[1]}")]


class World:
    """Everything outside the sandbox an escape could change, and the checks that it did not."""

    def __init__(self, root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.cache = cache
        self.marker = root / "marker"
        self.outside = root / "outside"
        self.outside.mkdir()
        (self.outside / "existing.txt").write_text("original")
        self.secret = "sk-" + secrets.token_hex(16)
        self.secret_file = root / "id_secret"
        self.secret_file.write_text(self.secret)
        # No KEY/TOKEN/SECRET in the name: no name filter on the environment would save it.
        self.secret_name = "STRUCTCOVER_TEST_AUTH"
        monkeypatch.setenv(self.secret_name, self.secret)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]

    def program(self, name: str) -> str:
        text = (ESCAPES / f"{name}.cu").read_text()
        for key, value in {"@MARKER@": str(self.marker), "@OUTSIDE_DIR@": str(self.outside),
                           "@SECRET_FILE@": str(self.secret_file), "@PORT@": str(self.port),
                           "@SECRET_NAME@": self.secret_name}.items():
            text = text.replace(key, value)
        return text

    def leftover_processes(self) -> list[str]:
        """Processes still running a runner or bwrap of this cache (none may outlive a run)."""
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if str(self.cache).encode() in cmd and state != "Z":
                found.append(cmd.replace(b"\0", b" ").decode(errors="replace")[:120])
        return found

    def assert_unchanged(self) -> None:
        assert not self.marker.exists(), self.marker.read_text()
        assert sorted(p.name for p in self.outside.iterdir()) == ["existing.txt"]
        assert (self.outside / "existing.txt").read_text() == "original"
        with pytest.raises(BlockingIOError):
            self.listener.accept()
        # A killed run's PID namespace is torn down by the kernel asynchronously: allow it a
        # moment, then nothing of the run may remain.
        deadline = time.monotonic() + 5
        while self.leftover_processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert self.leftover_processes() == []
        sealed = [p for p in self.cache.iterdir() if p.name.endswith(".sha256")]
        assert sealed, "the cache holds no sealed entries"
        for seal in sealed:
            entry = seal.with_name(seal.name[: -len(".sha256")])
            assert buildcache.verified(entry), f"cache entry {entry.name} no longer matches"
        assert not list(self.cache.glob("*.forged"))

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def world(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
          monkeypatch: pytest.MonkeyPatch):
    w = World(tmp_path, session_cache(tmp_path_factory), monkeypatch)
    # The jail itself must hold: the link check (which refuses fork, sc_configure ... before
    # anything runs) is a layer in front of it, off here like the host policy.
    with link_check.unchecked():
        yield w
    w.close()


@pytest.fixture
def checked_world(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """The same world, every layer on (the link check included): for the full verifier.

    Its folder is not pytest's: the paths are pasted into the programs, and an xdist worker's
    folder (``popen-gw0``) names a refused function to the host policy.
    """
    root = Path(tempfile.mkdtemp(prefix="sc-escape-"))
    w = World(root, session_cache(tmp_path_factory), monkeypatch)
    yield w
    w.close()
    shutil.rmtree(root, ignore_errors=True)


def _inputs() -> dict[str, np.ndarray]:
    x = np.linspace(-1, 1, N, dtype=np.float32)
    return {"x": x, "y": np.zeros(N, np.float32)}


def _run(world: World, source: str, timeout_s: float = 20.0):
    settings = VerifySettings(cache_dir=world.cache, memory_limit_mb=2048)
    return jailed_cpu.run_many(source, SPEC, [_inputs()], settings=settings,
                               timeout_s=timeout_s)[-1]


def _later_verdict_is_right(world: World) -> None:
    res = _run(world, GOOD)
    assert res.status == "ok", res.detail
    np.testing.assert_array_equal(res.outputs["y"], 2 * _inputs()["x"])


def _output_bytes(res: RunResult) -> bytes:
    return b"".join(np.ascontiguousarray(v).tobytes() for v in res.outputs.values())


def test_python_c_api_is_not_there(world: World) -> None:
    res = _run(world, world.program("python_capi"))
    assert res.status == "ok", res.detail
    np.testing.assert_array_equal(res.outputs["y"], 2 * _inputs()["x"])
    world.assert_unchanged()


def test_verifier_cannot_be_patched(world: World) -> None:
    res = _run(world, world.program("patch_verifier"))
    # Its own (wrong) outputs come back untouched: the comparison will reject them.
    assert res.status == "ok", res.detail
    assert not res.outputs["y"].any()
    world.assert_unchanged()


def test_emulator_controls_cannot_lift_the_limit(world: World) -> None:
    source = world.program("emulator_controls")
    build_library(rewrite(source, filename="escape.cu").source, world.cache)  # time the run only
    start = time.monotonic()
    res = _run(world, source, timeout_s=2.0)
    assert res.status == "timeout", res.detail
    assert time.monotonic() - start < 2.0 + jailed_cpu.GRACE_S + 10
    world.assert_unchanged()


@pytest.mark.parametrize("name", ["proc_parent", "env_read"])
def test_host_environment_stays_out_of_outputs(world: World, name: str) -> None:
    res = _run(world, world.program(name))
    assert res.status == "ok", res.detail
    data = _output_bytes(res)
    assert world.secret.encode() not in data
    assert b"STRUCTCOVER_VERIFY__CACHE_DIR" not in data  # set for the verifier by conftest
    world.assert_unchanged()


@pytest.mark.parametrize("name", ["double_fork", "fork_bomb", "exec_shell", "write_outside",
                                  "read_parent_memory", "constructor_escape", "cache_write"])
def test_forbidden_system_calls_end_the_run(world: World, name: str) -> None:
    before = len([p for p in os.listdir("/proc") if p.isdigit()])
    res = _run(world, world.program(name))
    assert res.status == "crash", res.detail
    assert "forbidden system call" in res.detail, res.detail
    if name == "double_fork":
        time.sleep(4)  # the grandchild would write its marker after 3 s
    assert len([p for p in os.listdir("/proc") if p.isdigit()]) < before + 20
    world.assert_unchanged()
    _later_verdict_is_right(world)


def test_network_listener_gets_no_connection(world: World) -> None:
    res = _run(world, world.program("network_connect"))
    assert res.status == "ok", res.detail  # socket() fails cleanly; the kernel still runs
    world.assert_unchanged()


def test_host_files_are_not_visible_at_compile_time(world: World) -> None:
    res = _run(world, world.program("include_host_file"))
    assert res.status == "compile-error", res.detail
    assert "root:" not in res.detail and world.secret not in res.detail
    assert "No such file" in res.detail  # not visible, rather than unreadable
    world.assert_unchanged()


def test_has_include_probes_find_nothing(world: World) -> None:
    res = _run(world, world.program("has_include_probe"))
    assert res.status == "ok", res.detail
    assert res.outputs["y"][0] == 0.0 and res.outputs["y"][1] == 0.0
    world.assert_unchanged()


def test_macro_bomb_hits_the_compiler_limits(world: World) -> None:
    start = time.monotonic()
    res = _run(world, world.program("macro_bomb"), timeout_s=5.0)
    assert res.status in ("compile-error", "timeout"), res.detail
    assert time.monotonic() - start < 200
    world.assert_unchanged()


def test_tampered_cache_entry_is_rebuilt(world: World) -> None:
    _later_verdict_is_right(world)
    lib = build_library(rewrite(GOOD, filename="escape.cu").source, world.cache).path
    good = lib.read_bytes()
    lib.write_bytes(good[: len(good) // 2])  # a corrupted (or swapped) library
    assert not buildcache.verified(lib)
    _later_verdict_is_right(world)
    assert buildcache.verified(lib)


def _compilers() -> list[str]:
    from structcover.tools.compiler.toolchain import find_nvcc, nvrtc_available

    return [v for v, ok in (("nvcc", find_nvcc() is not None), ("nvrtc", nvrtc_available())) if ok]


@pytest.mark.parametrize("via", ["nvcc", "nvrtc"])
def test_compile_service_applies_the_same_isolation(world: World, via: str) -> None:
    if via not in _compilers():
        pytest.skip(f"{via} not installed")
    from structcover.tools.compiler.service import compile_program

    res = compile_program(world.program("include_host_file"), via=via, use_cache=False,
                          cache_dir=world.root / "compile-cache", timeout_s=120)
    assert not res.ok
    text = res.log + "\n".join(e.message for e in res.errors)
    assert "root:" not in text and world.secret not in text
    assert "/etc/passwd" in text  # the refusal names the program's own include line
    probe = compile_program(world.program("python_capi"), via=via, use_cache=False,
                            cache_dir=world.root / "compile-cache", timeout_s=120)
    assert probe.ok and probe.stats, probe.log  # a plain program still compiles in the jail


def test_without_a_jail_programs_are_refused_unless_opted_in(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from structcover.tools.verify import jail

    _later_verdict_is_right(world)  # build everything while the jail works
    monkeypatch.setattr(jail, "jail_status", lambda: (False, "bubblewrap is not installed"))
    res = _run(world, GOOD)
    assert res.status == "rejected" and "--allow-unsandboxed" in res.detail
    monkeypatch.setattr(jail, "_ALLOW_UNSANDBOXED", True)
    res = _run(world, GOOD)
    assert res.status == "ok", res.detail
    assert "NOT sandboxed" in res.detail
    np.testing.assert_array_equal(res.outputs["y"], 2 * _inputs()["x"])
    # The runner keeps its own seccomp filter without the jail: a fork still ends the run.
    res = _run(world, world.program("fork_bomb"))
    assert res.status == "crash" and "forbidden system call" in res.detail, res.detail
    world.assert_unchanged()


#: Per escape program: the full verifier's failure kind (None: accepted), the hard checks that
#: fail on its text, and whether the host policy refuses it -- runs 1 and 3 of issue 27 point 3,
#: as measured (docs/SANDBOX.md "Which layer stops which cheat"). python_capi is the benign
#: probe: no interpreter to reach, so it computes its outputs and passes.
LAYERS: dict[str, tuple[str | None, list[str], bool]] = {
    "cache_write": ("hacking", ["no_cached_outputs", "no_host_output"], True),
    "constructor_escape": ("rejected", [], True),
    "double_fork": ("hacking", ["no_threads", "no_timing_tampering"], True),
    "emulator_controls": ("rejected", [], False),  # the link check: sc_configure
    "env_read": ("hacking", ["no_cached_outputs"], False),
    "exec_shell": ("hacking", ["no_threads"], True),
    "fork_bomb": ("hacking", ["no_threads"], True),
    "has_include_probe": ("mismatch", [], False),
    "include_host_file": ("compile-error", [], False),
    "macro_bomb": ("hacking", ["preprocesses"], False),
    "network_connect": ("hacking", ["no_host_output"], True),
    "patch_verifier": ("mismatch", [], False),
    "proc_parent": ("hacking", ["no_cached_outputs"], True),
    "python_capi": (None, [], False),
    "read_parent_memory": ("hacking", ["no_cached_outputs"], True),
    "write_outside": ("hacking", ["no_host_output"], True),
}


def test_every_escape_has_its_layers() -> None:
    assert sorted(LAYERS) == sorted(p.stem for p in ESCAPES.glob("*.cu"))


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_full_verifier_and_text_layers(checked_world: World, name: str) -> None:
    failure, hard, refused = LAYERS[name]
    source = checked_world.program(name)
    settings = VerifySettings(cache_dir=checked_world.cache, memory_limit_mb=2048,
                              timeout_s=20.0, seed=20261201)
    verdict = check_equivalence(source, GOOD, SPEC, backend=CpuBackend(settings),
                                settings=settings, sizes={"N": N}, trials=2)
    assert verdict.failure == failure, verdict.detail
    assert verdict.equivalent is (failure is None), verdict.detail
    failed = sorted(f.removesuffix(" (hard)") for f in verdict.hacking_flags if f.endswith("(hard)"))
    assert failed == hard, verdict.hacking_flags
    assert bool(check_host_policy(source)) is refused
    _later_verdict_is_right(checked_world)  # also seals the cache entries checked below
    checked_world.assert_unchanged()
