"""The jail itself: what a jailed command can see, its limits, and the refusal without one."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from structcover.doctor import check_sandbox
from structcover.tools.verify import jail
from structcover.tools.verify.jail import JailLimits, SandboxUnavailable, own_lines, run_jailed

needs_jail = pytest.mark.skipif(not jail.jail_status()[0],
                                reason=f"no jail here: {jail.jail_status()[1]}")


@needs_jail
def test_jailed_shell_sees_a_minimal_world(tmp_path: Path) -> None:
    (tmp_path / "visible.txt").write_text("ok")
    res = run_jailed(["/bin/sh", "-c", "id -u; ls /; cat /etc/passwd; ls /proc | grep -c '^[0-9]';"
                      "env; cat visible.txt; echo x > /usr/evil; echo y > visible.txt"],
                     ro=[tmp_path], cwd=tmp_path, limits=JailLimits(timeout_s=20))
    out = res.stdout.decode()
    lines = out.splitlines()
    assert lines[0] == "65534"  # nobody
    assert "etc" not in lines[1:8] and "home" not in lines and "root" not in lines
    assert "HOME=/tmp" in lines and not any(k.startswith("STRUCTCOVER") for k in lines)
    # Own PID namespace: bwrap's init, sh, ls, grep (the host has hundreds).
    assert int(next(ln for ln in lines if ln.isdigit() and ln != "65534")) <= 5
    assert "ok" in lines
    assert (tmp_path / "visible.txt").read_text() == "ok"  # read-only bind
    assert not Path("/usr/evil").exists()


@needs_jail
def test_wall_clock_limit_kills_every_process() -> None:
    start = time.monotonic()
    res = run_jailed(["/bin/sh", "-c", "(sleep 1000 &) ; sleep 1000"],
                     limits=JailLimits(timeout_s=1.5))
    assert res.timed_out and time.monotonic() - start < 10
    time.sleep(0.3)
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x001000\x00":
                left.append(pid)
        except OSError:
            pass
    assert left == []


@needs_jail
def test_memory_limit_applies_inside() -> None:
    res = run_jailed(["/usr/bin/python3", "-c", "b = bytearray(1 << 30)"],
                     limits=JailLimits(timeout_s=30, memory_mb=256))
    assert res.returncode != 0 and b"MemoryError" in res.stderr


def test_refuses_without_a_jail_unless_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jail, "jail_status", lambda: (False, "bubblewrap (bwrap) is not installed"))
    with pytest.raises(SandboxUnavailable, match="--allow-unsandboxed"):
        run_jailed(["/bin/true"], allow_unsandboxed=False)
    res = run_jailed(["/bin/sh", "-c", "echo ran"], allow_unsandboxed=True)
    assert res.stdout.strip() == b"ran" and not res.sandboxed
    assert "NOT sandboxed" in res.notes[0]
    check = check_sandbox()
    assert not check.ok and "--allow-unsandboxed" in check.how_to_get


def test_own_lines_drops_host_file_text() -> None:
    log = ("/etc/passwd:1:1: error: expected unqualified-id\n"
           "    1 | root:x:0:0:root:/root:/bin/bash\n"
           "      | ^~~~\n"
           "In file included from prog.cu:3:\n"
           "prog.cu:7:3: error: 'foo' was not declared\n"
           "    7 |   foo();\n")
    kept = own_lines(log, ("/build/program.cpp",))
    assert "root:x" not in kept and "/etc/passwd" not in kept
    assert "prog.cu:7:3: error: 'foo' was not declared" in kept and "foo();" in kept



def test_the_address_space_limit_is_the_last_thing_set_before_exec() -> None:
    """Where rlimits are set in a preexec_fn, the child is still a copy of the caller; a
    caller with more address space than the limit (torch and Ray loaded) fails any allocation
    made after RLIMIT_AS ("Exception occurred in preexec_fn"), so nothing may follow it."""
    import resource

    kinds = [kind for kind, _ in jail.limit_plan(JailLimits(timeout_s=30, memory_mb=512))]
    assert kinds[-1] == resource.RLIMIT_AS and kinds.count(resource.RLIMIT_AS) == 1
    assert {resource.RLIMIT_CPU, resource.RLIMIT_NOFILE, resource.RLIMIT_CORE} <= set(kinds)
