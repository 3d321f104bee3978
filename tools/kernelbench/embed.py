"""Splice edited CUDA text back into a KernelBench candidate, changing only the literals it came from.

A candidate's kernels live in Python string literals handed to ``load_inline`` (resolved by
:func:`~structcover.tools.kernelbench.candidate.find_inline_extensions`: constants, implicit
concatenations, ``a + b`` of such, names bound once at module level). To mutate a kernel and
keep a valid candidate, the edited text must go back into exactly those literals:

* :func:`embedded_sources` lists every ``cuda_sources`` text with its *origin*: the literal
  tokens it is the concatenation of, and for every character of the text the span of source
  that spells it (``\\n`` in a non-raw literal is two source characters for one text character).
* :func:`replace_source` diffs the old text against the new one line by line and rewrites only
  the changed stretches, each in the spelling of the literal it lands in: raw stays raw (an
  edit a raw literal cannot spell is refused), quotes and backslashes are escaped in a plain
  literal, ``{``/``}`` doubled in an f-string, newlines escaped in a one-line literal. The rest
  of the file, the unchanged CUDA lines, the literal's prefix, quotes and indentation stay byte
  for byte. The result is re-parsed and re-resolved: the spliced candidate must define the same
  ``load_inline`` calls with the new text in place of the old, or :class:`EmbedError` is raised.

A literal that feeds two sources (one name used twice) changes in both; the check accepts that
only where the other source held the same old text.
"""

from __future__ import annotations

import ast
import difflib
import functools
from dataclasses import dataclass

from structcover.tools.kernelbench.candidate import (
    InlineExtension,
    UnresolvedInline,
    _is_load_inline,
    _load_inline_names,
    _Resolver,
    find_inline_extensions,
)
from structcover.tools.kernelbench.literals import EmbedError, Literal, line_offsets, literals_of

__all__ = ["EmbedError", "EmbeddedSource", "Literal", "embedded_sources", "replace_source"]

@dataclass(frozen=True)
class EmbeddedSource:
    """One ``cuda_sources`` text of a candidate and the literals it is spelled by.

    Attributes:
        extension: Index of the ``load_inline`` call (file order, as ``find_inline_extensions``).
        index: Index within that call's ``cuda_sources``.
        name: The extension's ``name=``.
        text: The CUDA text.
        literals: The string tokens whose values, concatenated, are ``text``.
    """

    extension: int
    index: int
    name: str
    text: str
    literals: tuple[Literal, ...]


def _spelled(resolver: _Resolver, node: ast.expr, text: str, offsets: list[int],
             depth: int = 0) -> list[Literal] | list[list[Literal]]:
    """The literals spelling a string expression (or, for a list, each item's)."""
    if depth > 20:
        raise EmbedError("names refer to each other too deeply")
    if isinstance(node, ast.Constant | ast.JoinedStr):
        return literals_of(node, text, offsets)
    if isinstance(node, ast.List | ast.Tuple):
        items = [_spelled(resolver, e, text, offsets, depth + 1) for e in node.elts]
        if any(it and isinstance(it[0], list) for it in items):
            raise EmbedError("a nested list of sources")
        return items  # type: ignore[return-value]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _spelled(resolver, node.left, text, offsets, depth + 1)
        right = _spelled(resolver, node.right, text, offsets, depth + 1)
        return left + right  # type: ignore[operator]
    if isinstance(node, ast.Name) and node.id in resolver.bound:
        return _spelled(resolver, resolver.bound[node.id], text, offsets, depth + 1)
    raise EmbedError(f"line {getattr(node, 'lineno', '?')}: a source expression this module "
                     "cannot re-embed")


def embedded_sources(python_text: str) -> list[EmbeddedSource]:
    """Every ``cuda_sources`` text of a candidate, with the literals that spell it.

    Args:
        python_text: The candidate's Python source.

    Returns:
        One entry per ``cuda_sources`` item of every ``load_inline`` call, in file order.

    Raises:
        EmbedError: The file is not a resolvable KernelBench candidate, or a source is spelled
            by something other than string literals (the message names the line).
    """
    found = _embedded_once(python_text)
    if isinstance(found, EmbedError):
        raise EmbedError(str(found))
    return list(found)


@functools.lru_cache(maxsize=256)
def _embedded_once(python_text: str) -> tuple[EmbeddedSource, ...] | EmbedError:
    """:func:`embedded_sources` once per text (entries are frozen): a campaign's planner dry-runs
    every registered operator on each parent, and each run parsed the same file again (a
    third of the planner's time on KernelBench rollouts)."""
    try:
        return tuple(_find_embedded(python_text))
    except EmbedError as exc:
        return exc


def _find_embedded(python_text: str) -> list[EmbeddedSource]:
    try:
        exts = _extensions_once(python_text)
    except UnresolvedInline as exc:
        raise EmbedError(str(exc)) from exc
    tree = ast.parse(python_text)
    funcs, modules = _load_inline_names(tree)
    resolver = _Resolver(tree)
    offsets = line_offsets(python_text)
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and _is_load_inline(n.func, funcs, modules)), key=lambda n: n.lineno)
    out: list[EmbeddedSource] = []
    for k, (call, ext) in enumerate(zip(calls, exts, strict=True)):
        expr = next((kw.value for kw in call.keywords if kw.arg == "cuda_sources"),
                    call.args[2] if len(call.args) > 2 else None)
        if expr is None:
            continue
        if not ext.cuda_sources:
            continue
        spelled = _spelled(resolver, expr, python_text, offsets)
        items: list[list[Literal]] = (spelled if spelled and isinstance(spelled[0], list)
                                      else [spelled])  # type: ignore[list-item]
        if len(items) != len(ext.cuda_sources):
            raise EmbedError(f"line {call.lineno}: cuda_sources has {len(ext.cuda_sources)} "
                             f"texts but {len(items)} spellings")
        for j, (lits, value) in enumerate(zip(items, ext.cuda_sources, strict=True)):
            spelled_value = _value_of(lits, python_text)
            if spelled_value != value:
                raise EmbedError(f"line {call.lineno}: cuda_sources[{j}] is not spelled "
                                 "character for character by its literals")
            out.append(EmbeddedSource(extension=k, index=j, name=ext.name, text=value,
                                      literals=tuple(lits)))
    return out


def _value_of(lits: list[Literal], text: str) -> str:
    """The value the literals spell (decoded through ``ast`` per literal, concatenated)."""
    parts = []
    for lit in lits:
        node = ast.parse(text[lit.start:lit.end], mode="eval").body
        if isinstance(node, ast.JoinedStr):
            parts.append("".join(str(v.value) for v in node.values  # type: ignore[attr-defined]
                                 ))
        else:
            parts.append(node.value)  # type: ignore[attr-defined]
        if len(parts[-1]) != len(lit.spans):
            raise EmbedError(f"literal at offset {lit.start}: decoding disagrees with Python's")
    return "".join(parts)


def _spell(chunk: str, lit: Literal, escape_all_quotes: bool) -> str:
    """``chunk`` as the inside of ``lit`` would spell it.

    Raises:
        EmbedError: A raw literal cannot spell it.
    """
    q = lit.quote[0]
    triple = len(lit.quote) == 3
    if "r" not in lit.prefix and _plain(chunk, q, triple):
        # Most edits are plain code lines: nothing to escape (the loop below is per character).
        return chunk.replace("{", "{{").replace("}", "}}") if "f" in lit.prefix else chunk
    if "r" in lit.prefix:
        bad = (q * 3 if triple else q) in chunk or (not triple and ("\n" in chunk or "\r" in chunk))
        if bad or chunk.endswith("\\") or "\r" in chunk:
            raise EmbedError(f"a raw {lit.quote} literal cannot spell the edited text")
        if "f" in lit.prefix:
            chunk = chunk.replace("{", "{{").replace("}", "}}")
        return chunk
    out = []
    for i, ch in enumerate(chunk):
        if ch == "\\":
            out.append("\\\\")
        elif ch == q and (not triple or escape_all_quotes or i == 0 or i == len(chunk) - 1
                          or chunk[i + 1] == q):
            out.append("\\" + q)
        elif ch == "\n" and not triple:
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t" or ch == "\n" or ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}")
        if "f" in lit.prefix and ch in "{}":
            out[-1] = ch * 2
    return "".join(out)


def _plain(chunk: str, quote: str, triple: bool) -> bool:
    """Whether a plain (not raw) ``quote`` literal spells ``chunk`` as it is: no backslash,
    quote or carriage return, newlines only in a triple-quoted literal, every other
    character printable or a tab (what :func:`_spell`'s loop would keep unchanged)."""
    if "\\" in chunk or quote in chunk or "\r" in chunk or (not triple and "\n" in chunk):
        return False
    return chunk.replace("\n", "").replace("\t", "").isprintable()


def _locate(src: EmbeddedSource, pos: int) -> tuple[int, int]:
    """(literal index, file offset) where value position ``pos`` begins."""
    n = 0
    for k, lit in enumerate(src.literals):
        if pos < n + len(lit.spans):
            return k, lit.spans[pos - n][0]
        n += len(lit.spans)
    last = src.literals[-1]
    return len(src.literals) - 1, last.spans[-1][1] if last.spans else last.body_start


def _edits(src: EmbeddedSource, new: str, escape_all: bool) -> list[tuple[int, int, str]]:
    """File edits ``(start, end, text)`` turning ``src.text`` into ``new``, changed lines only."""
    old_lines = src.text.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    old_at = [0]
    for ln in old_lines:
        old_at.append(old_at[-1] + len(ln))
    new_at = [0]
    for ln in new_lines:
        new_at.append(new_at[-1] + len(ln))
    edits: list[tuple[int, int, str]] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a, b = old_at[i1], old_at[i2]
        chunk = new[new_at[j1]:new_at[j2]]
        if a < b:
            k_first, file_a = _locate(src, a)
            k_last, _ = _locate(src, b - 1)
            lit_last = src.literals[k_last]
            pos_in_last = b - 1 - sum(len(lt.spans) for lt in src.literals[:k_last])
            file_b = lit_last.spans[pos_in_last][1]
        else:  # a pure insertion goes after the previous character (in its literal)
            k_first, file_a = _locate(src, a - 1) if a > 0 else (0, src.literals[0].body_start)
            if a > 0:
                lit = src.literals[k_first]
                pos_in = a - 1 - sum(len(lt.spans) for lt in src.literals[:k_first])
                file_a = lit.spans[pos_in][1]
            k_last, file_b = k_first, file_a
        if k_first == k_last:
            edits.append((file_a, file_b, _spell(chunk, src.literals[k_first], escape_all)))
            continue
        # The changed stretch crosses literals: the new text goes into the first, the old
        # characters of the others are removed (their quotes and prefixes stay).
        first = src.literals[k_first]
        edits.append((file_a, first.spans[-1][1] if first.spans else first.body_end,
                      _spell(chunk, first, escape_all)))
        for lit in src.literals[k_first + 1:k_last]:
            if lit.spans:
                edits.append((lit.spans[0][0], lit.spans[-1][1], ""))
        edits.append((src.literals[k_last].spans[0][0], file_b, ""))
    return edits


def replace_source(python_text: str, source: EmbeddedSource, new_text: str) -> str:
    """The candidate with ``source``'s text replaced by ``new_text`` in its own literals.

    Args:
        python_text: The candidate (the one ``source`` was read from).
        source: One entry of :func:`embedded_sources` of ``python_text``.
        new_text: The edited CUDA text.

    Returns:
        The new candidate text: only the changed lines of the literals differ.

    Raises:
        EmbedError: The literal cannot spell the edit (a raw literal and a closing quote), or
            the spliced file does not resolve to the same extensions with the new text.
    """
    if new_text == source.text:
        return python_text
    if not source.literals:
        raise EmbedError(f"cuda_sources[{source.index}] of {source.name!r} has no literal")
    before = _extensions_once(python_text)
    last_error = ""
    for escape_all in (False, True):
        try:
            edits = _edits(source, new_text, escape_all)
        except EmbedError:
            raise
        out = python_text
        for a, b, text in sorted(edits, reverse=True):
            out = out[:a] + text + out[b:]
        problem = _check(out, before, source, new_text)
        if problem is None:
            return out
        last_error = problem
    raise EmbedError(f"the spliced candidate does not hold the edited source: {last_error}")


@functools.lru_cache(maxsize=256)
def _extensions_once(python_text: str) -> tuple[InlineExtension, ...]:
    """A candidate's extensions, read once per text (read only by the callers here): a
    campaign lists a parent's sources, then splices every dry-run variant of every operator
    into it and checks each splice against them."""
    return tuple(find_inline_extensions(python_text))


def _check(out: str, before: tuple[InlineExtension, ...], source: EmbeddedSource,
           new_text: str) -> str | None:
    """Why the spliced file is wrong, or None when it resolves to the intended extensions."""
    try:
        after = find_inline_extensions(out)
    except UnresolvedInline as exc:
        return str(exc)
    if len(after) != len(before):
        return f"{len(before)} load_inline calls became {len(after)}"
    for k, (old, new) in enumerate(zip(before, after, strict=True)):
        for field in ("name", "cpp_sources", "functions", "extra_cflags", "extra_cuda_cflags",
                      "extra_ldflags", "extra_include_paths"):
            if getattr(old, field) != getattr(new, field) and not _shared(
                    getattr(old, field), getattr(new, field), source.text, new_text):
                return f"extension {old.name!r}: {field} changed"
        if len(old.cuda_sources) != len(new.cuda_sources):
            return f"extension {old.name!r}: the number of cuda_sources changed"
        for j, (o, n) in enumerate(zip(old.cuda_sources, new.cuda_sources, strict=True)):
            if (k, j) == (source.extension, source.index):
                if n != new_text:
                    return f"extension {old.name!r}: cuda_sources[{j}] is not the edited text"
            elif o != n and not (o == source.text and n == new_text):
                return f"extension {old.name!r}: cuda_sources[{j}] changed too"
    return None


def _shared(old: object, new: object, old_text: str, new_text: str) -> bool:
    """A field that changed only because it holds the same literal as the edited source."""
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return all(o == n or (o == old_text and n == new_text) for o, n in zip(old, new,
                                                                               strict=True))
    return False
