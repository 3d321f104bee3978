"""Build-cache integrity: entries are sealed with their hash and a changed entry is a miss."""

from __future__ import annotations

import os
from pathlib import Path

from structcover.tools.compiler.cache import CompileCache
from structcover.tools.verify import buildcache


def test_seal_and_verify(tmp_path: Path) -> None:
    entry = tmp_path / "prog-abc.so"
    entry.write_bytes(b"library bytes")
    assert not buildcache.verified(entry)  # unsealed: never trusted by name
    buildcache.seal(entry)
    assert buildcache.verified(entry)
    entry.write_bytes(b"library bytez")  # same size, other bytes
    assert not buildcache.verified(entry)
    os.utime(entry, ns=(0, 0))  # an old mtime does not bring trust back
    assert not buildcache.verified(entry)
    assert not buildcache.verified(tmp_path / "missing.so")


def test_compile_cache_rejects_tampered_entries(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path)
    key = "ab" * 32
    path = cache.put(key, {"ok": True, "ptx": "// ptx"}, b"\x7fELF cubin")
    assert path is not None and cache.get(key)["ptx"] == "// ptx"
    path.write_bytes(b"\x7fELF forged")  # a swapped cubin makes the entry a miss
    assert cache.get(key) is None
    cache.put(key, {"ok": True, "ptx": "// ptx"}, b"\x7fELF cubin")
    assert cache.get(key) is not None
    entry = tmp_path / key[:2] / f"{key}.json"
    entry.write_text(entry.read_text().replace("// ptx", "// fake"))
    assert cache.get(key) is None


def test_concurrent_builders_of_one_entry_build_it_once(tmp_path: Path) -> None:
    # Four threads (as the runtime's pool, or workers sharing a cold cache) ask for one entry:
    # one builds it while the others wait on its lock, then find it built and sealed.
    import threading
    import time

    from structcover.tools.verify.emulator import _atomic_build

    builds: list[int] = []
    final = tmp_path / "unit-abc.o"

    def build(out: Path) -> None:
        builds.append(1)
        time.sleep(0.3)  # long enough for every other thread to arrive while it builds
        out.write_bytes(b"object")

    threads = [threading.Thread(target=_atomic_build, args=(final, build)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1
    assert final.read_bytes() == b"object" and buildcache.verified(final)
