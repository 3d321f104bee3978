"""Keep the emulator's build cache within a size by dropping the oldest per-program entries.

Every candidate verified on the CPU path leaves its own library in the cache: ``prog-<key>.so``
for a ``.cu`` program, ``kbext-<key>.so`` for a KernelBench extension (about 25 KB each with
clang), each with its seal (``.sha256``) and lock file. A watcher that verifies thousands of
candidates a round fills the disk round after round; they are rarely used again once their
round is over. What every build shares (precompiled headers, runtime objects and libraries)
is never pruned for size: it is small in number, costly to rebuild and in use by every build.

Entries are dropped oldest use first (the later of their access and modification times), and
never one used within ``min_age_s``: a verification that just found an entry may still be
copying it. A dropped entry is rebuilt if a program needs it again, as on a cold cache.

The shared parts are keyed by what built them (torch version, compiler, flags, the shims'
text), so an upgrade leaves the old ones behind (0.1-0.8 GB each): a shared part no build
has used for ``stale_s`` (14 days) is removed whatever the cache's size, as are the temporary
folders of builds killed that long ago. On a file system mounted ``noatime`` a use does not
show, so a shared part in constant use is rebuilt once every ``stale_s`` (about a minute).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

#: The cache entries one program or extension owns (the trusted parts are other names).
PER_PROGRAM = ("prog-*.so", "kbext-*.so")
_PER_PROGRAM_PREFIXES = tuple(p.split("*", 1)[0] for p in PER_PROGRAM)


@dataclass(frozen=True)
class PruneReport:
    """What a prune removed and what it left."""

    removed: int
    freed_bytes: int
    kept: int
    kept_bytes: int
    stale_removed: int = 0
    stale_bytes: int = 0

    @property
    def changed(self) -> bool:
        """Whether anything was removed."""
        return bool(self.removed or self.stale_removed)

    def line(self) -> str:
        """One line for a log or a summary."""
        return (f"build cache: removed {self.removed} entries ({self.freed_bytes / 1e6:.1f} MB), "
                f"kept {self.kept} ({self.kept_bytes / 1e6:.1f} MB); removed "
                f"{self.stale_removed} stale shared parts ({self.stale_bytes / 1e6:.1f} MB)")


@dataclass(frozen=True)
class _Entry:
    used: float
    size: int
    files: tuple[Path, ...]  # the library first, then its seal and lock


def _entries(cache_dir: Path) -> list[_Entry]:
    out: list[_Entry] = []
    for pattern in PER_PROGRAM:
        for lib in cache_dir.glob(pattern):
            files = (lib, lib.with_name(lib.name + ".sha256"), lib.with_suffix(".lock"))
            used, size = 0.0, 0
            for f in files:
                try:
                    st = f.stat()
                except FileNotFoundError:  # no seal or lock yet, or pruned meanwhile
                    continue
                size += st.st_size
                if f is lib:
                    used = max(st.st_atime, st.st_mtime)
            if used:
                out.append(_Entry(used, size, files))
    return out


def _use_and_size(path: Path) -> tuple[float, int]:
    """The latest access or modification under ``path`` and its size in bytes."""
    files = [path] if not path.is_dir() or path.is_symlink() else \
        [path, *(f for f in path.rglob("*") if not f.is_symlink())]
    used, size = 0.0, 0
    for f in files:
        try:
            st = f.lstat()
        except FileNotFoundError:
            continue
        if f.is_dir():  # listing a folder (this prune's own walk) moves its access time
            used = max(used, st.st_mtime)
        else:
            used, size = max(used, st.st_atime, st.st_mtime), size + st.st_size
    return used, size


def _stale_shared(cache_dir: Path, now: float, stale_s: float) -> list[_Entry]:
    """Shared parts (and leftovers) of ``cache_dir`` that no build used for ``stale_s``: the
    files and folders of one key (``NAME-<key>``, its seal and lock) as one entry."""
    groups: dict[str, list[Path]] = {}
    try:
        children = list(cache_dir.iterdir())
    except FileNotFoundError:
        return []
    for child in children:
        stem = child.name.split(".", 1)[0]
        if not stem.startswith(_PER_PROGRAM_PREFIXES):  # per-program entries: the size rule
            groups.setdefault(stem, []).append(child)
    out = []
    for paths in groups.values():
        uses = [_use_and_size(p) for p in paths]
        used = max(u for u, _ in uses)
        if now - used >= stale_s:
            out.append(_Entry(used, sum(n for _, n in uses), tuple(paths)))
    return out


def _remove(entry: _Entry) -> None:
    """Delete an entry's files in order (a library before its seal: a reader that finds no
    library rebuilds it; one that found it a moment ago still holds its open file)."""
    for f in entry.files:
        if f.is_dir() and not f.is_symlink():
            shutil.rmtree(f, ignore_errors=True)
            continue
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass


def per_program_usage(cache_dir: Path) -> tuple[int, int]:
    """(entries, bytes) of the per-program builds in ``cache_dir`` (what a prune may drop)."""
    entries = _entries(Path(cache_dir))
    return len(entries), sum(e.size for e in entries)


def prune_build_cache(cache_dir: Path, max_bytes: int, *, min_age_s: float = 3600.0,
                      stale_s: float = 14 * 86400.0, now: float | None = None) -> PruneReport:
    """Remove the least recently used per-program entries of ``cache_dir`` until they take at
    most ``max_bytes`` (or only entries used within ``min_age_s`` are left), and the shared
    parts no build used for ``stale_s``.

    Args:
        cache_dir: The emulator's build cache (``verify.cache_dir``).
        max_bytes: The size the per-program entries may keep.
        min_age_s: Entries used more recently than this are kept whatever their size.
        stale_s: Shared parts unused this long are removed.
        now: The current time (tests); default ``time.time()``.

    Raises:
        ValueError: ``max_bytes`` or ``min_age_s`` is negative.
    """
    if max_bytes < 0 or min_age_s < 0:
        raise ValueError(f"build cache prune: max_bytes ({max_bytes}) and min_age_s "
                         f"({min_age_s}) must not be negative")
    now = time.time() if now is None else now
    entries = sorted(_entries(Path(cache_dir)), key=lambda e: e.used)
    total = sum(e.size for e in entries)
    removed = freed = 0
    for entry in entries:
        if total <= max_bytes or now - entry.used < min_age_s:
            break
        _remove(entry)
        total -= entry.size
        removed += 1
        freed += entry.size
    stale = _stale_shared(Path(cache_dir), now, max(stale_s, min_age_s))
    for entry in stale:
        _remove(entry)
    return PruneReport(removed=removed, freed_bytes=freed, kept=len(entries) - removed,
                       kept_bytes=total, stale_removed=len(stale),
                       stale_bytes=sum(e.size for e in stale))


def prune_configured() -> PruneReport | None:
    """Prune ``verify.cache_dir`` to ``verify.cache_max_gb`` (None: that setting is unset).

    The watcher calls it after each round and ``structcover campaign`` after its run.

    Raises:
        OSError: The cache could not be read or an entry not removed.
    """
    from structcover.config import load_settings

    verify = load_settings().verify
    if verify.cache_max_gb is None:
        return None
    return prune_build_cache(verify.cache_dir, int(verify.cache_max_gb * 1e9))


def prune_after_run() -> tuple[str, str]:
    """:func:`prune_configured` for a command that has written its outputs already.

    Returns:
        (the report's line when anything was removed, else ""; the failure when the prune
        failed, else ""). A failed prune never fails the run: the next run prunes again.
    """
    try:
        report = prune_configured()
    except OSError as exc:
        return "", f"build cache prune failed: {exc}"
    return (report.line() if report is not None and report.changed else ""), ""
