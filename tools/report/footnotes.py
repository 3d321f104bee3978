"""Reasons shared by many table rows, said once: each repeated text becomes a numbered note.

On real data one reason ("3 attempts failed equivalence", one task rule's proof) often stands
on dozens of rows; printed on each, it buries the rows that differ.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable


class Footnotes:
    """Numbered notes for texts that occur on two or more rows; unique texts stay inline.

    Args:
        texts: Every text the table will show (with repeats), to count them first.
        prefix: Anchor prefix, unique per table on the page.
    """

    def __init__(self, texts: Iterable[str], *, prefix: str) -> None:
        counts = Counter(t for t in texts if t)
        self._prefix = prefix
        self._numbers: dict[str, int] = {}
        for text, n in counts.most_common():
            if n >= 2:
                self._numbers[text] = len(self._numbers) + 1
        self._uses = counts

    def cell(self, text: str) -> str:
        """The escaped text, or a link to its note when the text is shared."""
        number = self._numbers.get(text)
        if number is None:
            return html.escape(text)
        return f'<a href="#{self._prefix}-{number}">[{number}]</a>'

    def legend(self) -> str:
        """The notes, each with how many rows it stands for (empty when none is shared)."""
        if not self._numbers:
            return ""
        items = "".join(
            f'<li id="{self._prefix}-{n}" value="{n}">{html.escape(text)} '
            f'<span class="note">({self._uses[text]} rows)</span></li>'
            for text, n in self._numbers.items())
        return f'<ol class="notes">{items}</ol>'
