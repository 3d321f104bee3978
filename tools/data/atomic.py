"""Atomic file writes: write beside the target, then rename over it (never a half file).

The one home for "write a file so no reader ever sees it half written". Every writer in the
package (state files, caches, reports, curated data, built emulator objects) goes through
:func:`atomic_write` or its wrappers, so all share two guarantees:

* the result has the permissions a plain ``open(path, "w")`` would give under the process
  umask (``tempfile.mkstemp`` creates ``0600`` files, which made reports served to colleagues
  unreadable);
* the temporary file or folder is removed whatever happens, so a failed write leaves the old
  target untouched and nothing beside it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows.

    ``os.umask`` can only be read by setting it, which races with threads creating files;
    Linux reports it in ``/proc/self/status``, so that is tried first.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_mode(executable: bool = False) -> int:
    """Permissions a new file (with ``executable``: a folder or program) gets under the umask."""
    return (0o777 if executable else 0o666) & ~current_umask()


def atomic_write(path: Path | str, write: Callable[[Path], object], *,
                 executable: bool = False) -> Path:
    """Call ``write(tmp)`` on a temp file in the target's folder, then rename it to ``path``.

    ``write`` may write the temp file in place or replace it (compilers unlink their output
    first); either way the result gets :func:`default_mode` permissions.

    Args:
        path: The target file.
        write: Writes the content to the path it is given.
        executable: Give the file execute permission (built shared objects).

    Returns:
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, default_mode(executable))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_text(text: str, path: Path | str) -> Path:
    """Write a UTF-8 text file atomically."""
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_bytes(data: bytes, path: Path | str) -> Path:
    """Write a binary file atomically."""
    return atomic_write(path, lambda p: p.write_bytes(data))


def atomic_dir(folder: Path | str, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` on a fresh folder beside ``folder``, then swap it in.

    An existing ``folder`` is replaced only after ``write`` succeeded; the temp folder is
    removed whatever happens.

    Returns:
        ``folder``.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        write(tmp)
        os.chmod(tmp, default_mode(executable=True))
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return folder
