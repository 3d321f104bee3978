"""Non-UTF-8 sources are decoded with a fallback, kept, and report parse.encoding (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import feature_kernels as K
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools.cuda_ast import decode_source
from structcover.tools.features.extract import extract_features, extract_values

LATIN1_COMMENT = ("// Auteur : R\u00e9mi \u2014 d\u00e9cal\u00e9 \u00e0 droite\n"
                  + K.COALESCED)


def test_decode_source_falls_back_in_order():
    assert decode_source("\u00e9".encode()) == ("\u00e9", "utf-8")
    assert decode_source(b"\xef\xbb\xbfint x;") == ("int x;", "utf-8-sig")
    assert decode_source(b"// \x93quoted\x94") == ("// \u201cquoted\u201d", "cp1252")
    # 0x81 is undefined in cp1252; Latin-1 maps every byte.
    assert decode_source(b"// \x81") == ("// \x81", "latin-1")


def test_latin1_program_is_kept_and_its_features_match_the_utf8_one():
    raw = LATIN1_COMMENT.encode("cp1252", errors="replace")
    with_fallback = extract_values(raw)
    plain = extract_values(LATIN1_COMMENT)
    assert with_fallback["parse.encoding"] == "cp1252" and plain["parse.encoding"] == "utf-8"
    assert with_fallback["parse.error_nodes"] == 0
    assert {k: v for k, v in with_fallback.items() if k != "parse.encoding"} == \
        {k: v for k, v in plain.items() if k != "parse.encoding"}
    assert with_fallback["mem.global_coalesced"] == 3
    assert extract_features(raw).program_id == extract_features(
        raw.decode("cp1252")).program_id


def test_features_command_keeps_a_latin1_cu_file(tmp_path: Path):
    (tmp_path / "ok.cu").write_text(K.COALESCED)
    (tmp_path / "latin.cu").write_bytes(LATIN1_COMMENT.encode("latin-1", errors="replace"))
    res = CliRunner().invoke(app, ["features", str(tmp_path), "--json", "--no-cache"])
    assert res.exit_code == 0, res.output
    rows = {r["task_id"]: r["values"] for r in json.loads(res.stdout)}
    assert set(rows) == {"ok", "latin"}
    assert rows["latin"]["parse.encoding"] == "cp1252"
    assert rows["ok"]["parse.encoding"] == "utf-8"
    assert rows["latin"]["mem.global_coalesced"] == rows["ok"]["mem.global_coalesced"] == 3
