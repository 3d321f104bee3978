"""Prompt templates of the LLM policies: one ``prompts/<name>.md`` per purpose, filled with
``string.Template``; the first line of each is ``<!-- prompt: NAME vN -->``, its version,
which is stripped from the text and recorded with the usage."""

from __future__ import annotations

import re
from importlib import resources
from string import Template
from typing import Any

_VERSION = re.compile(r"<!--\s*prompt:\s*(\S+)\s+v(\d+)\s*-->\s*\n?")


def load_prompt(name: str) -> tuple[int, Template]:
    """The version and template of prompt ``name`` (without ``.md``).

    Raises:
        FileNotFoundError: No such prompt (the message names it).
        ValueError: The file has no version line.
    """
    path = resources.files("structcover.prompts") / f"{name}.md"
    try:
        text = path.read_text()
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"prompt {name!r} not found in structcover.prompts") from exc
    m = _VERSION.match(text)
    if not m:
        raise ValueError(f"prompt {name!r}: first line must be '<!-- prompt: {name} vN -->'")
    return int(m.group(2)), Template(text[m.end():])


def render(name: str, **values: Any) -> str:
    """Prompt ``name`` filled with ``values``.

    Raises:
        KeyError: A template variable has no value (named with the prompt).
    """
    _, template = load_prompt(name)
    try:
        return template.substitute(**{k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise KeyError(f"prompt {name!r}: missing template variable {exc.args[0]!r}") from exc
