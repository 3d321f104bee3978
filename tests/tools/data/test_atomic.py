"""Atomic writes: umask-respecting permissions, no temp files left, old file kept on failure."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from structcover.tools.data.atomic import (
    atomic_dir,
    atomic_write,
    current_umask,
    write_bytes,
    write_text,
)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_umask_is_read_without_changing_it(umask_022) -> None:
    assert current_umask() == 0o022
    assert current_umask() == 0o022


def test_text_file_is_readable_by_others_under_umask_022(tmp_path: Path, umask_022) -> None:
    out = write_text("héllo", tmp_path / "sub" / "report.html")
    assert out.read_text(encoding="utf-8") == "héllo"
    assert _mode(out) == 0o644
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]


def test_private_umask_is_respected(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        out = write_bytes(b"\x00\x01", tmp_path / "a.bin")
    finally:
        os.umask(old)
    assert out.read_bytes() == b"\x00\x01"
    assert _mode(out) == 0o600


def test_executable_output_keeps_execute_bits(tmp_path: Path, umask_022) -> None:
    out = atomic_write(tmp_path / "lib.so", lambda p: p.write_bytes(b"ELF"), executable=True)
    assert _mode(out) == 0o755


def test_writer_that_replaces_its_output_still_gets_the_mode(tmp_path: Path, umask_022) -> None:
    def replace(p: Path) -> None:  # what a compiler does: unlink, then create anew
        p.unlink()
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"x")
        os.close(fd)

    out = atomic_write(tmp_path / "obj.o", replace)
    assert _mode(out) == 0o644


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = write_text("old", tmp_path / "state.json")

    def boom(p: Path) -> None:
        p.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(target, boom)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_folder_is_swapped_in_whole(tmp_path: Path, umask_022) -> None:
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "stale.txt").write_text("stale")
    atomic_dir(folder, lambda p: (p / "data.txt").write_text("new"))
    assert sorted(p.name for p in folder.iterdir()) == ["data.txt"]
    assert _mode(folder) == 0o755

    with pytest.raises(ValueError):
        atomic_dir(folder, lambda p: (_ for _ in ()).throw(ValueError("bad")))
    assert (folder / "data.txt").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
