"""Python string tokens, and the file span that spells each character of their value.

The re-embedding of edited CUDA (:mod:`structcover.tools.kernelbench.embed`) must write a
changed character back in the spelling of the literal it lands in, so it needs, per value
character, where in the file that character is spelled (``\\n`` in a plain literal is two
source characters for one value character; a raw literal spells each character as itself).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

__all__ = ["EmbedError", "Literal", "line_offsets", "literals_of"]

_PREFIX = re.compile(r"^([rRuUfF]*)('''|\"\"\"|'|\")")
_SIMPLE_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t", "v": "\v"}


class EmbedError(ValueError):
    """The edited text cannot go back into the candidate (the message says why)."""


@dataclass(frozen=True)
class Literal:
    """One string token of the candidate.

    Attributes:
        start: Offset of the token's first character (its prefix) in the file.
        end: Offset just past its closing quote.
        prefix: ``r``, ``f``, ``rf``... as written (lower-cased).
        quote: ``\"\"\"``, ``'''``, ``\"`` or ``'``.
        spans: Per character of the literal's value, the ``(start, end)`` file offsets that
            spell it.
    """

    start: int
    end: int
    prefix: str
    quote: str
    spans: tuple[tuple[int, int], ...]

    @property
    def body_start(self) -> int:
        """Offset of the first character after the opening quote."""
        return self.start + len(self.prefix) + len(self.quote)

    @property
    def body_end(self) -> int:
        """Offset of the closing quote."""
        return self.end - len(self.quote)


def line_offsets(text: str) -> list[int]:
    offsets, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        offsets.append(pos)
    return offsets


def _decode(token: str, start: int) -> Literal:
    """Spans of every value character of one string token starting at file offset ``start``."""
    m = _PREFIX.match(token)
    if m is None or "b" in m.group(1).lower():
        raise EmbedError(f"not a text string literal: {token[:40]!r}")
    prefix, quote = m.group(1).lower(), m.group(2)
    body_at = len(m.group(0))
    body = token[body_at:len(token) - len(quote)]
    raw, fstr = "r" in prefix, "f" in prefix
    spans: list[tuple[int, int]] = []
    i = 0
    base = start + body_at
    while i < len(body):
        ch = body[i]
        if fstr and ch in "{}":
            if body[i:i + 2] != ch * 2:
                raise EmbedError("an f-string with placeholders cannot be re-embedded")
            spans.append((base + i, base + i + 2))
            i += 2
            continue
        if ch != "\\" or raw:
            # In a raw literal a backslash is itself (and protects the next quote, also itself).
            spans.append((base + i, base + i + 1))
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt == "\n":  # a line continuation spells nothing
            i += 2
            continue
        if nxt in _SIMPLE_ESCAPES:
            n = 2
        elif nxt in "01234567":
            n = 2 + len(re.match(r"[0-7]{0,2}", body[i + 2:]).group(0))  # type: ignore[union-attr]
        elif nxt == "x":
            n = 4
        elif nxt == "u":
            n = 6
        elif nxt == "U":
            n = 10
        elif nxt == "N":
            n = body.index("}", i) + 1 - i
        else:  # an unknown escape keeps its backslash: two characters, each itself
            spans.append((base + i, base + i + 1))
            i += 1
            continue
        spans.append((base + i, base + i + n))
        i += n
    return Literal(start=start, end=start + len(token), prefix=prefix, quote=quote,
                   spans=tuple(spans))


def literals_of(node: ast.expr, text: str, offsets: list[int]) -> list[Literal]:
    """The string tokens inside one ``Constant``/``JoinedStr`` node, in order."""
    assert node.end_lineno is not None and node.end_col_offset is not None
    lines = text.splitlines(keepends=True)
    # ast's columns are UTF-8 byte offsets; convert to character offsets per line.
    def char_off(lineno: int, col: int) -> int:
        line = lines[lineno - 1].encode("utf-8", "surrogatepass")
        return offsets[lineno - 1] + len(line[:col].decode("utf-8", "surrogatepass"))

    start = char_off(node.lineno, node.col_offset)
    end = char_off(node.end_lineno, node.end_col_offset)
    region = text[start:end]
    out: list[Literal] = []
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(region).readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise EmbedError(f"cannot tokenize the literal at line {node.lineno}: {exc}") from exc
    region_offsets = line_offsets(region)
    for tok in toks:
        if tok.type == tokenize.STRING:
            at = start + region_offsets[tok.start[0] - 1] + tok.start[1]
            out.append(_decode(tok.string, at))
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER,
                              tokenize.INDENT, tokenize.DEDENT):
            raise EmbedError(f"line {node.lineno}: a string expression this module cannot "
                             f"re-embed (token {tok.string!r})")
    return out
