"""Integrity of the build caches: every entry is sealed with its SHA-256 by the trusted side.

The emulator's build cache (program libraries, runtime objects, the precompiled header, the
runner) and the compile service's cache are content-addressed (the file name is a hash of what
went into the build). That alone does not stop a changed file from being trusted by name, so
the trusted side writes ``NAME.sha256`` beside each entry when it creates it, and every use
checks the file against it: an entry whose seal is missing or wrong is deleted and rebuilt.
Jailed processes never see the cache folder writable (they get single files, read-only).
"""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from structcover.tools.data.atomic import write_text

_SUFFIX = ".sha256"
_checked: set[tuple] = set()


def _seal_path(path: Path) -> Path:
    return path.with_name(path.name + _SUFFIX)


def digest(path: Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def seal(path: Path) -> None:
    """Record ``path``'s hash beside it; the trusted side calls it right after building.

    A reader that looks between the rename and the seal sees no (or an old) seal and rebuilds:
    extra work, never a wrong hit.
    """
    path = Path(path)
    write_text(digest(path) + "\n", _seal_path(path))


def verified(path: Path) -> bool:
    """True when ``path`` exists and matches its seal.

    A missing, unsealed or changed entry is False: the caller builds it again, overwriting it
    (nothing is deleted here, so concurrent readers are safe).
    """
    path = Path(path)
    try:
        expected = _seal_path(path).read_text().strip()
        st = path.stat()
        # Any change to a file moves its ctime (which no caller can set) or its inode, so a
        # hash checked once per identity is still valid; the 16 MB PCH is not rehashed per run.
        identity = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, expected)
        if identity in _checked:
            return True
        ok = bool(expected) and digest(path) == expected
    except OSError:
        return False
    if ok:
        _checked.add(identity)
    return ok


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """One builder per cache entry across processes and threads (the others wait on ``path``,
    an ``flock``ed lock file, then find the entry built)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
