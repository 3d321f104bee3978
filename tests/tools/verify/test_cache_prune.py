"""The emulator's build cache is pruned of its oldest per-program entries, never of the parts
every build shares, and never of an entry used within the guard time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from structcover.tools.verify.cache_prune import prune_build_cache

NOW = 2_000_000_000.0  # 2033: every test time stays after 1970
HOUR = 3600.0


def _entry(cache: Path, name: str, size: int, used: float, seal: bool = True) -> Path:
    lib = cache / name
    lib.write_bytes(b"x" * size)
    os.utime(lib, (used, used))
    if seal:
        (cache / f"{name}.sha256").write_text("0" * 64 + "\n")  # 65 bytes
        lib.with_suffix(".lock").touch()
    return lib


def test_oldest_entries_go_first_until_the_rest_fits(tmp_path: Path) -> None:
    old = _entry(tmp_path, "kbext-a.so", 1000, NOW - 5 * HOUR)
    mid = _entry(tmp_path, "prog-b.so", 1000, NOW - 4 * HOUR)
    new = _entry(tmp_path, "kbext-c.so", 1000, NOW - 3 * HOUR)
    # Three entries of 1065 bytes (library + seal): 3195; keep at most 2200 -> drop one.
    report = prune_build_cache(tmp_path, 2200, now=NOW)
    assert (report.removed, report.freed_bytes, report.kept, report.kept_bytes) == \
        (1, 1065, 2, 2130)
    assert not old.exists() and not (tmp_path / "kbext-a.so.sha256").exists()
    assert not (tmp_path / "kbext-a.lock").exists()
    assert mid.exists() and new.exists()


def test_trusted_parts_and_recent_entries_are_kept(tmp_path: Path) -> None:
    trusted = [_entry(tmp_path, n, 5000, NOW - 100 * HOUR)
               for n in ("libsc_kbrt-k.so", "libsc_kbpy-k.so", "libsc_kbpch-k.so")]
    (tmp_path / "kbpch-k").mkdir()
    (tmp_path / "sc_emu-k.o").write_bytes(b"o" * 5000)
    for shared in (tmp_path / "kbpch-k", tmp_path / "sc_emu-k.o"):
        os.utime(shared, (NOW - 100 * HOUR, NOW - 100 * HOUR))  # in use this week
    recent = _entry(tmp_path, "kbext-r.so", 1000, NOW - 0.5 * HOUR)
    stale = _entry(tmp_path, "prog-s.so", 1000, NOW - 2 * HOUR, seal=False)
    report = prune_build_cache(tmp_path, 0, now=NOW)
    assert report.removed == 1 and not stale.exists()  # an unsealed entry is an entry too
    assert recent.exists()  # used within the hour: perhaps being copied right now
    assert all(p.exists() for p in trusted) and (tmp_path / "sc_emu-k.o").exists()
    assert (tmp_path / "kbpch-k").is_dir()


def test_a_recent_access_counts_as_use(tmp_path: Path) -> None:
    lib = _entry(tmp_path, "kbext-a.so", 1000, NOW - 9 * HOUR)
    os.utime(lib, (NOW - 0.1 * HOUR, NOW - 9 * HOUR))  # read (loaded) a few minutes ago
    assert prune_build_cache(tmp_path, 0, now=NOW).removed == 0


def test_a_cache_under_its_size_is_left_alone_and_bad_limits_are_named(tmp_path: Path) -> None:
    _entry(tmp_path, "kbext-a.so", 1000, NOW - 9 * HOUR)
    assert prune_build_cache(tmp_path, 10_000, now=NOW).removed == 0
    assert prune_build_cache(tmp_path / "missing", 0, now=NOW).kept == 0
    with pytest.raises(ValueError, match="max_bytes"):
        prune_build_cache(tmp_path, -1)


def test_doctor_reports_the_cache_and_its_per_program_builds(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from structcover.doctor import check_build_cache

    _entry(tmp_path, "kbext-a.so", 1000, NOW)
    (tmp_path / "libsc_kbrt-k.so").write_bytes(b"x" * 3000)
    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_DIR", str(tmp_path))
    check = check_build_cache()
    assert check.ok and "1 per-program builds" in check.detail
    assert "prunes them to 10 GB" in check.detail
    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_DIR", str(tmp_path / "none"))
    assert "empty" in check_build_cache().detail


def test_shared_parts_unused_for_two_weeks_go_whatever_the_size(tmp_path: Path) -> None:
    day = 24 * HOUR
    old_pch = tmp_path / "kbdevpch-old"
    old_pch.mkdir()
    (old_pch / "kb_torch.hpp.gch").write_bytes(b"p" * 4000)
    (tmp_path / "kbdevpch-old.lock").touch()
    old_lib = _entry(tmp_path, "libsc_kbrt-old.so", 3000, NOW - 20 * day)
    for f in (old_pch / "kb_torch.hpp.gch", old_pch, tmp_path / "kbdevpch-old.lock",
              tmp_path / "libsc_kbrt-old.so.sha256", tmp_path / "libsc_kbrt-old.lock"):
        os.utime(f, (NOW - 20 * day, NOW - 20 * day))
    current = _entry(tmp_path, "libsc_kbrt-new.so", 3000, NOW - 2 * day)
    leftover = tmp_path / "tmpabc123"  # a build killed long ago
    leftover.mkdir()
    os.utime(leftover, (NOW - 30 * day, NOW - 30 * day))
    report = prune_build_cache(tmp_path, 10**9, now=NOW)
    assert report.removed == 0 and report.stale_removed == 3
    assert report.stale_bytes >= 4000 + 3000
    assert not old_pch.exists() and not (tmp_path / "kbdevpch-old.lock").exists()
    assert not old_lib.exists() and not (tmp_path / "libsc_kbrt-old.so.sha256").exists()
    assert not leftover.exists() and current.exists()


def test_after_a_run_a_prune_reports_its_line_or_its_failure(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from structcover.tools.verify import cache_prune

    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("STRUCTCOVER_VERIFY__CACHE_MAX_GB", "0.000001")  # 1000 bytes
    import time

    _entry(tmp_path, "kbext-a.so", 2000, time.time() - 5 * HOUR)  # the command prunes at now
    line, failure = cache_prune.prune_after_run()
    assert failure == "" and line.startswith("build cache: removed 1 entries")
    assert not (tmp_path / "kbext-a.so").exists()

    def broken() -> None:
        raise PermissionError(13, "Permission denied", str(tmp_path))

    monkeypatch.setattr(cache_prune, "prune_configured", broken)
    line, failure = cache_prune.prune_after_run()
    assert line == "" and failure.startswith("build cache prune failed: ") and \
        "Permission denied" in failure
