"""Run mypy over the ``structcover`` package as it is installed, from the source tree.

pyproject's package-dir maps top-level folders (``tools/``, ``agents/``, ``graphs/``,
``prompts/``) into the ``structcover.*`` namespace. An editable install resolves that with an
import hook, which mypy cannot follow, so this script lays the package out the way it is
installed (a temporary tree of symbolic links, one per mapped folder), runs
``mypy -p structcover`` on it and prints the findings with the repository's own paths.

Usage: ``python scripts/typecheck.py [extra mypy arguments]``; exits with mypy's status.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def link_tree(dest: Path) -> dict[str, str]:
    """Build the installed layout under ``dest`` from links; return link path → repo path."""
    mapping: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["package-dir"]
    pkg = dest / "structcover"
    pkg.mkdir()
    for entry in (ROOT / "src" / "structcover").iterdir():
        (pkg / entry.name).symlink_to(entry)
    back = {f"{pkg}/": "src/structcover/"}
    # Only the top of each mapped subtree needs a link: its subpackages come with the folder.
    for name, folder in sorted(mapping.items()):
        parts = name.split(".")
        if name == "structcover":
            continue
        if len(parts) == 2 or not any(".".join(parts[:i]) in mapping for i in range(2, len(parts))):
            target = pkg.joinpath(*parts[1:])
            target.symlink_to(ROOT / folder, target_is_directory=True)
            back[f"{target}/"] = f"{folder}/"
    return back


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="sc-mypy-") as tmp:
        back = link_tree(Path(tmp))
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "-p", "structcover", *argv]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True,
                              env={**os.environ, "MYPYPATH": tmp})
        out = proc.stdout + proc.stderr
        for link, real in sorted(back.items(), key=lambda kv: -len(kv[0])):
            out = out.replace(link, real).replace(link.removeprefix(f"{tmp}/"), real)
        sys.stdout.write(out)
        return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
