"""The ``dev`` rows a new held-out ranking set borrows from another set.

``bench/bench_kernelbench_ranking.py`` picks the length sign and fits the static and profile
scores on ``dev`` pairs, so a held-out-only set (the H100 and RTX 4090 leaderboard sets) is
built with another set's ``dev`` rows beside its own, their solutions linked, not copied.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def borrow_dev_rows(dev: Path | None, out: Path) -> list[dict[str, Any]]:
    """The ``dev`` rows of ``dev``'s manifest, each solution linked into ``out/solutions``.

    Args:
        dev: A ranking set's folder (``manifest.json`` and ``solutions/``), or None for none.
        out: The set being built (its ``solutions/`` exists).

    Returns:
        The rows, as the manifest has them; empty when ``dev`` is None.
    """
    if dev is None:
        return []
    manifest = json.loads((dev / "manifest.json").read_text())
    rows = []
    for row in manifest["solutions"] if isinstance(manifest, dict) else manifest:
        if row["split"] == "dev":
            link = out / "solutions" / row["file"]
            if not link.exists():
                os.symlink((dev / "solutions" / row["file"]).resolve(), link)
            rows.append(row)
    return rows
