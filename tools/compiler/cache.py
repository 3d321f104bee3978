"""On-disk compile cache keyed by a content hash; safe for concurrent processes.

Each entry is ``<key>.json`` (the result) plus ``<key>.cubin``. Writes go to a unique
temporary file in the same folder and are renamed into place (``os.replace`` is atomic on
POSIX), so a reader sees a whole entry or none, and two processes compiling the same program
simply both write the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from structcover.tools.data.atomic import write_bytes
from structcover.tools.verify import buildcache

#: Bump when the stored result's meaning changes, so old entries stop matching.
CACHE_FORMAT = 2


def cache_key(source: str, arch: str, via: str, flags: list[str], compiler_version: str) -> str:
    """Hash of everything that decides a compile's output."""
    blob = json.dumps({"format": CACHE_FORMAT, "source": source, "arch": arch, "via": via,
                       "flags": flags, "compiler": compiler_version}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class CompileCache:
    """A folder of compile results.

    Args:
        root: The cache folder (created on first write).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser()

    def _dir(self, key: str) -> Path:
        return self.root / key[:2]  # fan out so no folder grows huge

    def cubin_path(self, key: str) -> Path:
        """Where the cubin of entry ``key`` lives."""
        return self._dir(key) / f"{key}.cubin"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored result for ``key``, or None (a missing, corrupt or tampered entry is a
        miss: the JSON and the cubin must match the hashes sealed when they were written)."""
        path = self._dir(key) / f"{key}.json"
        if not buildcache.verified(path):
            return None
        try:
            result = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return None
        cubin = result.get("cubin_path") if isinstance(result, dict) else None
        if cubin and not buildcache.verified(Path(cubin)):
            return None
        return result

    def put(self, key: str, result: dict[str, Any], cubin: bytes | None) -> Path | None:
        """Store a result (and its cubin) atomically.

        Returns:
            The cubin's path, or None when there is no cubin.
        """
        cubin_path = None
        if cubin:
            cubin_path = self.cubin_path(key)
            write_bytes(cubin, cubin_path)
            buildcache.seal(cubin_path)
            result = {**result, "cubin_path": str(cubin_path)}
        # The JSON goes last: an entry is visible only once its cubin is in place.
        entry = self._dir(key) / f"{key}.json"
        write_bytes(json.dumps(result).encode(), entry)
        buildcache.seal(entry)
        return cubin_path
