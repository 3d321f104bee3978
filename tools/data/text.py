"""Source text from bytes: the one decode step every command and reader uses.

A program file may start with a byte-order mark, end its lines with CRLF, or carry a byte
that is not UTF-8 in a comment (an editor on Windows). Every command must read such a file
the same way, so all go through :func:`decode_source` (bytes already in hand: dataset rows)
or :func:`read_source` (a file named on the command line). A binary file is refused with
its name instead of being decoded into noise.
"""

from __future__ import annotations

from pathlib import Path

#: Decodings tried in order for source bytes: UTF-8 (a BOM is dropped), Windows-1252 (what
#: editors on Windows write; a few byte values are undefined in it), then Latin-1, which maps
#: every byte and so never fails. nvcc itself reads bytes, so a Latin-1 comment compiles.
ENCODINGS = ("utf-8", "cp1252", "latin-1")


def decode_source(raw: bytes) -> tuple[str, str]:
    """Text of source bytes and the encoding that read them (never raises).

    Returns:
        ``(text, encoding)`` with encoding one of ``utf-8``, ``utf-8-sig``, ``cp1252``,
        ``latin-1``.
    """
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # the mark goes even when a later byte is not UTF-8 (nvcc rejects it)
        try:
            return raw.decode("utf-8"), "utf-8-sig"
        except UnicodeDecodeError:
            pass
    for encoding in ENCODINGS:
        try:
            return raw.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    return raw.decode("latin-1", "replace"), "latin-1"  # unreachable: latin-1 maps all bytes


def read_source(path: Path | str) -> str:
    """The text of a source file: decoded by :func:`decode_source`, line ends made ``\\n``.

    Raises:
        ValueError: The file holds a NUL byte (a binary file, not source text); the message
            names the file and the offset.
        OSError: The file cannot be read (the exception names it).
    """
    path = Path(path)
    raw = path.read_bytes()
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise ValueError(f"{path}: binary file (NUL byte at offset {nul}), not source text")
    text, _ = decode_source(raw)
    return text.replace("\r\n", "\n").replace("\r", "\n")
