"""Bad input through the CLI: one ``error:`` line naming the input, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover import cli
from structcover.cli import app
from structcover.commands._output import describe_error

runner = CliRunner()

#: A kernel file as a Windows editor writes it: BOM, CRLF, a cp1252 byte in a comment.
WINDOWS_KERNEL = (b"\xef\xbb\xbf__global__ void scale(float* x, int n) { // caf\xe9\r\n"
                  b"  int i = blockIdx.x * blockDim.x + threadIdx.x;\r\n"
                  b"  if (i < n) x[i] *= 2.0f;\r\n}\r\n")


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def _one_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = _error_lines(result.output)
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    path = tmp_path / "blob.cu"
    path.write_bytes(b"\x7fELF\x00\x01\xff\xfe" * 8)
    return path


@pytest.mark.parametrize("args", [["demo", "--rounds", "0"], ["simulate", "--rounds", "0"],
                                  ["rank-eval", "a.parquet", "b.parquet", "--folds", "1"],
                                  ["features", "x.cu", "--block-size", "0"]])
def test_counts_out_of_range_are_one_error_line(args: list[str]) -> None:
    line = _one_error(runner.invoke(app, args))
    assert args[-2] in line


@pytest.mark.parametrize("command", [["mutate", "{f}", "--op", "unroll_pragma"], ["compile", "{f}"],
                                     ["check", "{f}"], ["verify", "{f}", "--task", "saxpy"]])
def test_binary_file_is_named_not_decoded(binary: Path, command: list[str]) -> None:
    args = [a.format(f=binary) for a in command]
    line = _one_error(runner.invoke(app, args))
    assert str(binary) in line and "binary file" in line


def test_missing_file_is_one_error_line(tmp_path: Path) -> None:
    line = _one_error(runner.invoke(app, ["check", str(tmp_path / "nope.cu")]))
    assert "nope.cu" in line


def test_windows_file_reads_like_a_plain_one(tmp_path: Path) -> None:
    path = tmp_path / "win.cu"
    path.write_bytes(WINDOWS_KERNEL)
    plain = tmp_path / "plain.cu"
    plain.write_text(WINDOWS_KERNEL[3:].replace(b"\r\n", b"\n").decode("cp1252"), "utf-8")

    def features(p: Path) -> dict:
        result = runner.invoke(app, ["features", str(p), "--json", "--no-cache"])
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)
        assert len(rows) == 1
        return {k: v for k, v in rows[0]["values"].items() if k != "parse.encoding"}

    assert features(path) == features(plain)
    checks = runner.invoke(app, ["check", str(path), "--json"])
    assert checks.exit_code == 0, checks.output
    by_name = {c["name"]: c for c in json.loads(checks.stdout)["checks"]}
    assert by_name["defines_kernel"]["ok"]


@pytest.mark.nvcc
def test_windows_file_compiles(tmp_path: Path) -> None:
    path = tmp_path / "win.cu"
    path.write_bytes(WINDOWS_KERNEL)
    result = runner.invoke(app, ["compile", str(path), "--via", "nvcc", "--json"])
    assert json.loads(result.stdout)["ok"], result.output


def _raise_in_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                      exc: BaseException) -> Path:
    """An existing file whose reading raises ``exc`` deep inside ``check``."""
    from structcover.commands import check

    def boom(*_args, **_kwargs):
        raise exc

    monkeypatch.setattr(check, "read_source", boom)
    path = tmp_path / "a.cu"
    path.write_text("__global__ void k() {}\n")
    return path


@pytest.mark.parametrize(("exc", "expect"), [
    (PermissionError(13, "Permission denied", "/data/r.jsonl"), "/data/r.jsonl: Permission denied"),
    (UnicodeDecodeError("utf-8", b"ab\xff", 2, 3, "invalid start byte"), "byte 0xff at offset 2"),
    (ValueError("r.jsonl line 3: no program column\nsecond line"),
     "line 3: no program column second"),
])
def test_top_level_handler_turns_input_errors_into_one_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, exc: BaseException, expect: str) -> None:
    path = _raise_in_command(monkeypatch, tmp_path, exc)
    line = _one_error(runner.invoke(app, ["check", str(path)]))
    assert expect in line


def test_a_bug_is_one_line_with_the_way_to_its_traceback(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = _raise_in_command(monkeypatch, tmp_path, RuntimeError("boom"))
    line = _one_error(runner.invoke(app, ["check", str(path)]), code=1)
    assert "RuntimeError: boom" in line and cli.DEBUG_ENV in line
    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    result = runner.invoke(app, ["check", str(path)])
    assert isinstance(result.exception, RuntimeError)


def test_describe_error_without_filename() -> None:
    assert describe_error(OSError(28, "No space left on device")) == "No space left on device"
    assert describe_error(KeyError("speedup")) == "missing 'speedup'"


def test_ingest_writes_no_quarantine_file_unasked(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "in" / "r.jsonl"
    data.parent.mkdir()
    data.write_text(json.dumps({"task_id": "t", "program": "__global__ void k(){}"}) + "\n"
                    + json.dumps({"task_id": "t"}) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    result = runner.invoke(app, ["ingest", str(data), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["quarantined"] == 1 and summary["quarantine_file"] is None
    assert list(work.iterdir()) == []
    asked = tmp_path / "q.jsonl"
    result = runner.invoke(app, ["ingest", str(data), "--quarantine", str(asked), "--json"])
    assert json.loads(result.stdout)["quarantine_file"] == str(asked) and asked.is_file()


def test_tables_fit_80_columns_and_json_keeps_full_reasons(tmp_path: Path) -> None:
    # No kernel: the check's reason is longer than a table cell.
    path = tmp_path / "host.cu"
    path.write_text("void host_only(float* x) { x[0] = 1.f; }\n")
    long_reason = "no __global__ kernel is defined: the program does no custom GPU work"
    table = runner.invoke(app, ["check", str(path)], terminal_width=80)
    lines = table.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, table.stdout
    assert "the program do…" in table.stdout  # clipped to the cell limit, not wrapped whole
    full = runner.invoke(app, ["check", str(path), "--json"])
    assert long_reason in [c["reason"] for c in json.loads(full.stdout)["checks"]]


@pytest.mark.parametrize("command", [["discover", "{f}"], ["diagnose", "{f}", "--state", "{d}"]])
def test_zero_rows_warn_then_one_error_line(tmp_path: Path, command: list[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    args = [a.format(f=empty, d=tmp_path / "state") for a in command]
    result = runner.invoke(app, args)
    line = _one_error(result)
    assert f"warning: {empty}: 0 rows loaded" in result.output
    assert "feature columns" in line  # why nothing can be done with zero rows


def test_mutate_on_a_runaway_block_size_returns_at_once(tmp_path: Path) -> None:
    # 9**9**9**9 once hung the eval()-based size arithmetic; the syntax-tree evaluator refuses
    # it, so the block size is "not a constant" and the operator does not apply.
    import subprocess
    import sys

    path = tmp_path / "runaway.cu"
    path.write_text(
        "__global__ void scale(float* x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) x[i] *= 2.0f;\n}\n"
        'extern "C" int launch(float* x, int n) {\n'
        "  const int block = 9**9**9**9;\n"
        "  scale<<<(n + 255) / 256, block>>>(x, n);\n  return 0;\n}\n")
    done = subprocess.run([sys.executable, "-c", "from structcover.cli import main; main()",
                           "mutate", str(path), "--op", "block_size"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "does not apply" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
