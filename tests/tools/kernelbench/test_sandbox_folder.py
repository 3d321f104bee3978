"""The child's folder keeps regular files and folders only (``sandbox.plain_files_only``).

The candidate's process writes that folder; the host reads it afterwards. A link (to the
reference's cached outputs, or to a folder of the host's) would be followed, a FIFO would block
the read: both are removed before anything is read, wherever they are in the folder.
"""

from __future__ import annotations

import os

from structcover.tools.kernelbench.sandbox import plain_files_only


def test_links_and_fifos_go_files_and_folders_stay(tmp_path):
    outside = tmp_path / "outside"
    (outside / "secret").mkdir(parents=True)
    (outside / "ref.npz").write_bytes(b"reference")
    out = tmp_path / "out"
    (out / "nested").mkdir(parents=True)
    (out / "result.json").write_text("{}")
    (out / "nested" / "kept.txt").write_text("mine")
    os.symlink(outside / "ref.npz", out / "out_0.npz")
    os.symlink(outside / "secret", out / "folder_link")
    os.symlink(outside / "ref.npz", out / "nested" / "deep_link")
    os.mkfifo(out / "nested" / "pipe")

    removed = plain_files_only(out)

    assert sorted(removed) == ["folder_link", "nested/deep_link", "nested/pipe", "out_0.npz"]
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert left == ["nested", "nested/kept.txt", "result.json"]
    assert (outside / "ref.npz").read_bytes() == b"reference"  # the targets are untouched
    assert (outside / "secret").is_dir()
