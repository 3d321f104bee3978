"""Nsight Compute counters in the emulator's names (tools/verify/ncu.py) and the cross-check
bench (bench/cross_check_ncu.py).

No GPU and no ncu here: the CSV fixtures are hand-made from ncu's documented ``--csv --page
raw`` layout (a header row of identity columns then metric names, a units row whose identity
cells are empty, one row per kernel launch), and the subprocess path runs against a fake
``ncu`` executable placed first on PATH that records its arguments, runs the target like ncu
does and prints a canned CSV. Only the test marked ``gpu`` touches real ncu.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from structcover.tools.data.corpus import find_task
from structcover.tools.verify import ncu
from structcover.tools.verify.gpu_runner import GpuBackend
from structcover.tools.verify.profile import MAXED, SUMMED, build_report

ROOT = Path(__file__).resolve().parents[3]
GPU_OK, GPU_WHY = GpuBackend().available()
NCU_OK, NCU_WHY = ncu.ncu_available()

LD_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
LD_SECT = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
ST_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
BAR = "smsp__inst_executed_op_barrier.sum"
SMEM = "launch__shared_mem_per_block_static"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
HADD = "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum"
GRID, BLOCK = "launch__grid_size", "launch__block_size"

_IDENT = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC"')
_METRICS = [GRID, BLOCK, LD_REQ, LD_SECT, ST_REQ, BAR, SMEM, FFMA]
# Hand-made, in ncu's raw layout: ncu's own messages around it, a units row, thousands
# separators, a demangled templated kernel launched twice (block sizes 256 and 64), and an
# "n/a" barrier value in the last launch.
RAW_CSV = "\n".join([
    "==PROF== Connected to process 4242 (/usr/bin/python3)",
    "==PROF== Profiling \"saxpy_kernel\" - 0: 0%....50%....100% - 9 passes",
    ",".join([_IDENT, *(f'"{m}"' for m in _METRICS)]),
    '"","","","","","","","","","",""' + ',"block","thread","request","sector","request","inst","byte","inst"',
    '"0","4242","python3","host","saxpy_kernel(const float *, float *, float, int)","1","13",'
    '"(256, 1, 1)","(196, 1, 1)","0","9.0","196","256","3,126","12,500","1,563","0","0","50,000"',
    '"1","4242","python3","host","void ns::reduce<256, float>(const float *, float *, int)","1","13",'
    '"(256, 1, 1)","(10, 1, 1)","0","9.0","10","256","80","320","0","160","1,024","0"',
    '"2","4242","python3","host","void ns::reduce<64, float>(const float *, float *, int)","1","13",'
    '"(64, 1, 1)","(1, 1, 1)","0","9.0","1","64","2","8","1","n/a","256","0"',
    "==PROF== Disconnected from process 4242",
])


def test_parse_raw_csv_one_dict_per_launch():
    launches = ncu.parse_ncu_csv(RAW_CSV)
    assert [lc["id"] for lc in launches] == [0, 1, 2]
    assert [lc["kernel_base"] for lc in launches] == ["saxpy_kernel", "reduce", "reduce"]
    assert launches[1]["kernel"] == "void ns::reduce<256, float>(const float *, float *, int)"
    first = launches[0]["metrics"]
    assert (first[LD_REQ], first[LD_SECT], first[FFMA]) == (3126.0, 12500.0, 50000.0)
    assert launches[0]["units"][LD_SECT] == "sector"
    assert launches[0]["info"]["Block Size"] == "(256, 1, 1)"
    assert BAR not in launches[2]["metrics"]  # "n/a" is absent, not zero
    assert launches[2]["metrics"][SMEM] == 256.0


def test_parse_long_form_groups_rows_by_launch():
    # Hand-made: the default (details) page exported as CSV, one row per metric.
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
            '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
            '"Metric Value"')
    row = '"{i}","1","p","h","{k}","1","7","(128, 1, 1)","(4, 1, 1)","0","8.0","Raw","{m}","{u}","{v}"'
    text = "\n".join([head, row.format(i=0, k="copy(float *)", m=LD_REQ, u="request", v="1,024"),
                      row.format(i=0, k="copy(float *)", m=GRID, u="block", v="4"),
                      row.format(i=1, k="copy(float *)", m=LD_REQ, u="Krequest", v="2.5")])
    launches = ncu.parse_ncu_csv(text)
    assert [(lc["id"], lc["metrics"]) for lc in launches] == [
        (0, {LD_REQ: 1024.0, GRID: 4.0}), (1, {LD_REQ: 2500.0})]
    assert "Section Name" not in launches[0]["info"]


@pytest.mark.parametrize(("text", "unit", "value"), [
    ("1,234,567", "sector", 1234567.0), ("12.5", "inst", 12.5), ("1.5", "Kbyte", 1500.0),
    ("2", "Msector", 2e6), ("n/a", "byte", None), ("", "", None), ("N/A", "", None),
    ("3", "byte", 3.0)])
def test_parse_value(text, unit, value):
    assert ncu.parse_value(text, unit) == value


def test_parse_nothing_without_a_header():
    assert ncu.parse_ncu_csv("==PROF== No kernels were profiled.\n") == []


@pytest.mark.parametrize(("name", "base"), [
    ("saxpy_kernel(const float *, float *, float, int)", "saxpy_kernel"),
    ("void ns::reduce<256, float>(const float *, float *, int)", "reduce"),
    ("void scan<Op<(int)1>>(float *)", "scan"),
    ("(anonymous namespace)::kern(int)", "kern"),
    ("reduce<256>", "reduce"), ("sgemm_tiled", "sgemm_tiled")])
def test_base_name(name, base):
    assert ncu.base_name(name) == base


def test_to_counters_sums_per_kernel_in_our_names():
    kernels = ncu.to_counters(ncu.parse_ncu_csv(RAW_CSV))
    saxpy, reduce = kernels["saxpy_kernel"], kernels["reduce"]
    assert saxpy["global_load_requests"] == 3126 and saxpy["global_load_sectors"] == 12500
    assert saxpy["threads"] == 196 * 256 and saxpy["warps"] == 196 * 8
    assert saxpy["ops_fp32_fma"] == 50000 and saxpy["launches"] == 1
    # Two launches of reduce<...> add up; the static shared size is the larger one.
    assert reduce["launches"] == 2 and reduce["blocks"] == 11
    assert reduce["global_load_requests"] == 82 and reduce["warps"] == 10 * 8 + 1 * 2
    assert reduce["shared_static_bytes"] == 1024
    # The barrier was "n/a" in one of its launches: left out, not summed over the other.
    assert "barriers" not in reduce
    assert saxpy["barriers"] == 0
    total = ncu.total_counters(kernels)
    assert total["global_load_requests"] == 3126 + 82 and "barriers" not in total
    assert total["shared_static_bytes"] == 1024


def test_barriers_are_divided_by_warps_per_block():
    entry = next(m for m in ncu.MAPPING if m.counter == "barriers")
    # 160 barrier instructions by the 8 warps of each of 10 blocks: 2 barriers per block.
    assert ncu.launch_value(entry, {BAR: 160.0, BLOCK: 256.0}) == 20.0
    assert ncu.launch_value(entry, {BAR: 6.0, BLOCK: 33.0}) == 3.0  # 33 threads are 2 warps
    assert ncu.launch_value(entry, {BAR: 6.0}) is None


def test_mapping_covers_every_profile_counter():
    ours = {*SUMMED, *MAXED, "launches"}
    mapped = {m.counter for m in ncu.MAPPING}
    compared = {c for m in ncu.MAPPING for c in m.emulator_counters()}
    assert mapped <= ours and compared <= ours
    assert not mapped & set(ncu.UNMAPPED)
    assert ours - mapped - compared - set(ncu.UNMAPPED) == set()
    assert set(ncu.UNMAPPED) <= ours
    assert all(m.combine in ("sum", "count", "per_block_warp", "grid_threads", "grid_warps", "max")
               for m in ncu.MAPPING)


def test_ncu_command_line():
    cmd = ncu.ncu_command(["a__b.sum", "c__d.sum"], ["python", "-m", "t", "--x"], ncu="/opt/ncu",
                          log_file="/tmp/out.csv")
    assert cmd == ["/opt/ncu", "--csv", "--page", "raw", "--print-units", "base",
                   "--target-processes", "all", "--metrics", "a__b.sum,c__d.sum",
                   "--log-file", "/tmp/out.csv", "python", "-m", "t", "--x"]
    assert "--log-file" not in ncu.ncu_command(["a__b.sum"], ["t"])
    with pytest.raises(ValueError):
        ncu.ncu_command([], ["t"])


def test_unknown_metrics_are_dropped_and_launch_attributes_kept():
    listing = ("Device NVIDIA H100 (GH100)\n-----\nMetric Name    Metric Description\n"
               "l1tex__t_requests_pipe_lsu_mem_global_op_ld   # of requests\n"
               "smsp__inst_executed_op_barrier   # of barrier instructions\n")
    known = ncu.parse_query_metrics(listing)
    assert known == {"l1tex__t_requests_pipe_lsu_mem_global_op_ld", "smsp__inst_executed_op_barrier"}
    keep, dropped = ncu.split_known([LD_REQ, LD_SECT, BAR, GRID], known)
    assert keep == [LD_REQ, BAR, GRID] and dropped == [LD_SECT]
    assert ncu.split_known([LD_SECT], None) == ([LD_SECT], [])


def test_default_metrics_cover_the_mapping_once():
    metrics = ncu.default_metrics()
    assert len(metrics) == len(set(metrics))
    assert {LD_REQ, LD_SECT, BAR, GRID, BLOCK, FFMA, HADD} <= set(metrics)


def test_compare_counters_bands():
    assert ncu.agrees(100, 100, 0.0) and ncu.agrees(0, 0, 0.0)
    assert not ncu.agrees(100, 101, 0.0) and ncu.agrees(100, 109, 0.10)
    assert not ncu.agrees(0, 5, 1.0) and not ncu.agrees(100, 111, 0.10)
    cmp = ncu.compare_counters({"blocks": 196, "global_load_requests": 3126, "barriers": 2},
                               {"blocks": 196, "global_load_requests": 3300})
    assert cmp["blocks"] == {"emulator": 196, "ncu": 196, "ratio": 1.0, "tolerance": 0.0,
                             "agree": True, "exact": True}
    assert cmp["global_load_requests"]["agree"] is True and cmp["global_load_requests"]["exact"] is False
    assert cmp["barriers"]["ncu"] is None and cmp["barriers"]["agree"] is None


def test_emulator_side_adds_bf16_to_fp16_and_merges_template_instances():
    counters = {c: 0 for c in (*SUMMED, *MAXED)} | {"launches": 1, "ops_fp16_add": 3,
                                                   "ops_bf16_add": 4, "shared_static_bytes": 64}
    side = ncu.emulator_side(counters)
    assert side["ops_fp16_add"] == 7
    merged = ncu.emulator_by_base({"reduce<256>": counters,
                                   "reduce<64>": counters | {"shared_static_bytes": 512}})
    assert list(merged) == ["reduce"]
    assert merged["reduce"]["launches"] == 2 and merged["reduce"]["shared_static_bytes"] == 512


# --- the subprocess path, with a fake ncu ----------------------------------------------------

FAKE_NCU = """#!{python}
# Fake ncu: records its arguments, answers --version / --query-metrics, otherwise runs the
# target (the arguments after ncu's own options, as ncu does) and prints a canned CSV.
import json, os, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_NCU_RECORD"], "a") as f:
    f.write(json.dumps(args) + "\\n")
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1 (fake)")
    sys.exit(0)
if args == ["--query-metrics"]:
    print(open(os.environ["FAKE_NCU_QUERY"]).read())
    sys.exit(0)
i, log = 0, None
while i < len(args) and args[i].startswith("--"):
    if args[i] == "--csv":
        i += 1
        continue
    if args[i] == "--log-file":
        log = args[i + 1]
    i += 2
subprocess.call(args[i:])
out = open(os.environ["FAKE_NCU_CSV"]).read()
if log:
    open(log, "w").write(out)
else:
    print(out)
sys.exit(int(os.environ.get("FAKE_NCU_RC", "0")))
"""

# Stands in for `python -m structcover.tools.verify.ncu`: same arguments, same result file.
FAKE_TARGET = """import argparse, json, os
p = argparse.ArgumentParser()
for a in ("--source", "--spec", "--result", "--seed", "--sizes", "--cache-dir"):
    p.add_argument(a)
args = p.parse_args()
with open(os.environ["FAKE_TARGET_RECORD"], "a") as f:
    f.write(json.dumps(vars(args) | {"source_text": open(args.source).read()}) + "\\n")
with open(args.result, "w") as f:
    json.dump({"status": "ok", "detail": "fake gpu"}, f)
"""

QUERY = "\n".join(["Metric Name   Metric Description",
                   *(ncu.metric_base(m) + "   fake" for m in ncu.default_metrics()
                     if m != "smsp__sass_branch_targets.sum")])


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """A fake ncu first on PATH and a fake target module on PYTHONPATH; returns the files."""
    bin_dir, mod_dir = tmp_path / "bin", tmp_path / "mods"
    bin_dir.mkdir()
    mod_dir.mkdir()
    exe = bin_dir / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable))
    exe.chmod(0o755)
    (mod_dir / "fake_target.py").write_text(FAKE_TARGET)
    files = {name: tmp_path / f"{name}.txt" for name in ("record", "target", "csv", "query")}
    files["csv"].write_text(RAW_CSV)
    files["query"].write_text(QUERY)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(mod_dir),
                                                                   os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("FAKE_NCU_RECORD", str(files["record"]))
    monkeypatch.setenv("FAKE_TARGET_RECORD", str(files["target"]))
    monkeypatch.setenv("FAKE_NCU_CSV", str(files["csv"]))
    monkeypatch.setenv("FAKE_NCU_QUERY", str(files["query"]))
    files["exe"] = exe
    return files


def _calls(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_profile_with_ncu_end_to_end_on_a_fake_ncu(fake_ncu, tmp_path):
    spec, family = find_task("saxpy")
    assert ncu.find_ncu() == str(fake_ncu["exe"])
    assert ncu.ncu_available()[0] is True
    prof = ncu.profile_with_ncu(family.reference.source, spec, {"N": 1000}, seed=7,
                                cache_dir=tmp_path / "gpu-cache", module="fake_target")
    assert prof.kernels["saxpy_kernel"]["global_load_requests"] == 3126
    assert prof.total["global_load_requests"] == 3126 + 82
    assert prof.dropped_metrics == ["smsp__sass_branch_targets.sum"]
    # ncu was asked for every known metric (not the dropped one), in raw CSV, into a log file.
    ncu_call = _calls(fake_ncu["record"])[-1]
    assert ncu_call[:8] == ["--csv", "--page", "raw", "--print-units", "base",
                            "--target-processes", "all", "--metrics"]
    asked = ncu_call[8].split(",")
    assert "smsp__sass_branch_targets.sum" not in asked and LD_SECT in asked and GRID in asked
    assert ncu_call[9] == "--log-file" and ncu_call[11:13] == [sys.executable, "-m"]
    # The target ran twice (plain, then under ncu) with the program, seed and sizes.
    runs = _calls(fake_ncu["target"])
    assert len(runs) == 2
    assert runs[0]["source_text"] == family.reference.source
    assert runs[0]["seed"] == "7" and json.loads(runs[0]["sizes"]) == {"N": 1000}
    assert runs[0]["cache_dir"] == str(tmp_path / "gpu-cache")
    assert prof.to_dict()["command"][0] == str(fake_ncu["exe"])


def test_query_off_requests_every_metric(fake_ncu, tmp_path):
    spec, family = find_task("saxpy")
    prof = ncu.profile_with_ncu(family.reference.source, spec, cache_dir=tmp_path,
                                module="fake_target", query=False)
    calls = _calls(fake_ncu["record"])
    assert ["--query-metrics"] not in calls and prof.dropped_metrics == []
    assert calls[-1][8].split(",") == ncu.default_metrics()


def test_ncu_permission_error_is_explained(fake_ncu, monkeypatch, tmp_path):
    fake_ncu["csv"].write_text("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission")
    monkeypatch.setenv("FAKE_NCU_RC", "1")
    spec, family = find_task("saxpy")
    with pytest.raises(ncu.NcuError, match="only administrators"):
        ncu.profile_with_ncu(family.reference.source, spec, cache_dir=tmp_path, module="fake_target")


def test_no_kernel_profiled_is_an_error(fake_ncu, tmp_path):
    fake_ncu["csv"].write_text("==PROF== No kernels were profiled.\n")
    spec, family = find_task("saxpy")
    with pytest.raises(ncu.NcuError, match="profiled no kernel"):
        ncu.profile_with_ncu(family.reference.source, spec, cache_dir=tmp_path, module="fake_target")


@pytest.mark.skipif(GPU_OK, reason="checks the path without a GPU")
def test_real_target_without_a_gpu_says_why(fake_ncu, tmp_path):
    # The real target module (python -m structcover.tools.verify.ncu) finds no GPU: the
    # plain run fails before ncu is asked to profile anything.
    spec, family = find_task("saxpy")
    with pytest.raises(ncu.NcuError, match="did not run on the GPU: unsupported"):
        ncu.profile_with_ncu(family.reference.source, spec, {"N": 64}, cache_dir=tmp_path)
    assert not any("--metrics" in call for call in _calls(fake_ncu["record"]))


def test_no_ncu_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    ok, why = ncu.ncu_available()
    assert ok is False and "not found" in why
    spec, family = find_task("saxpy")
    with pytest.raises(ncu.NcuError, match="not found"):
        ncu.profile_with_ncu(family.reference.source, spec, cache_dir=tmp_path)


# --- the bench --------------------------------------------------------------------------------

def _bench():
    spec = importlib.util.spec_from_file_location("cross_check_ncu", ROOT / "bench" / "cross_check_ncu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_exits_2_without_a_gpu(monkeypatch, tmp_path, capsys):
    bench = _bench()
    monkeypatch.setattr(bench.GpuBackend, "available", lambda self: (False, "no usable GPU: test"))
    out = tmp_path / "x.json"
    assert bench.main(["--out", str(out)]) == 2
    assert "gpu backend unavailable: no usable GPU: test" in capsys.readouterr().err
    assert not out.exists()


def test_bench_exits_2_without_ncu(monkeypatch, tmp_path, capsys):
    bench = _bench()
    monkeypatch.setattr(bench.GpuBackend, "available", lambda self: (True, "fake"))
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    assert bench.main(["--out", str(tmp_path / "x.json")]) == 2
    assert "ncu unavailable: ncu (Nsight Compute CLI) not found" in capsys.readouterr().err


# The emulator's launch of the saxpy reference at N=50000 (its real counters, as
# profile_program reported them), so the bench runs without building the emulator.
SAXPY_LAUNCH = {c: 0 for c in (*SUMMED, *MAXED)} | {
    "kernel": "saxpy_kernel", "blocks": 196, "threads": 50176, "warps": 1568,
    "global_load_requests": 3126, "global_load_sectors": 12500, "global_store_requests": 1563,
    "ops_fp32_fma": 50000, "sites": []}


def test_bench_end_to_end_on_a_fake_ncu(fake_ncu, monkeypatch, tmp_path):
    bench = _bench()
    monkeypatch.setattr(bench.GpuBackend, "available", lambda self: (True, "fake"))
    monkeypatch.setattr(bench, "profile_program", lambda source, spec, **kw: build_report(
        json.dumps([SAXPY_LAUNCH]), [], spec, spec.sizes))
    real = ncu.profile_with_ncu
    monkeypatch.setattr(ncu, "profile_with_ncu",
                        lambda *a, **kw: real(*a, **kw, module="fake_target"))
    # Only the saxpy launch, with one store request fewer than the emulator counts.
    fake_ncu["csv"].write_text("\n".join(RAW_CSV.splitlines()[:5]).replace('"1,563"', '"1,500"'))
    out = tmp_path / "ncu.json"
    assert bench.main(["--tasks", "saxpy", "--references-only", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    (row,) = data["rows"]
    assert (row["task"], row["program"], row["status"]) == ("saxpy", "reference", "ok")
    total = row["total"]
    assert total["global_load_sectors"] == {"emulator": 12500.0, "ncu": 12500.0, "ratio": 1.0,
                                            "tolerance": 0.1, "agree": True, "exact": True}
    assert total["global_store_requests"]["ratio"] == pytest.approx(1500 / 1563)
    assert total["global_store_requests"]["agree"] is True  # 4 % is inside the 10 % band
    assert total["global_store_requests"]["exact"] is False
    assert row["kernels"]["saxpy_kernel"]["threads"]["exact"] is True
    summary = data["summary"]
    assert summary["counters"]["global_store_requests"] == {
        "compared": 1, "agree": 1, "exact": 0, "tolerance": 0.1,
        "ratio_min": round(1500 / 1563, 4), "ratio_max": round(1500 / 1563, 4)}
    assert "global_load_requests" in summary["agreeing_counters"]
    assert summary["failed"] == [] and summary["shape_disagreements"] == []


def test_bench_exit_1_when_the_launch_shape_disagrees(fake_ncu, monkeypatch, tmp_path):
    bench = _bench()
    monkeypatch.setattr(bench.GpuBackend, "available", lambda self: (True, "fake"))
    monkeypatch.setattr(bench, "profile_program", lambda source, spec, **kw: build_report(
        json.dumps([SAXPY_LAUNCH | {"blocks": 195}]), [], spec, spec.sizes))
    real = ncu.profile_with_ncu
    monkeypatch.setattr(ncu, "profile_with_ncu",
                        lambda *a, **kw: real(*a, **kw, module="fake_target"))
    fake_ncu["csv"].write_text("\n".join(RAW_CSV.splitlines()[:5]))
    out = tmp_path / "ncu.json"
    assert bench.main(["--tasks", "saxpy", "--references-only", "--out", str(out)]) == 1
    assert json.loads(out.read_text())["summary"]["shape_disagreements"] == ["saxpy/reference: blocks"]


# --- on a GPU with ncu (scripts/gpu_check.sh runs the gpu-marked tests) -------------------------

@pytest.mark.gpu
@pytest.mark.skipif(not (GPU_OK and NCU_OK), reason=f"needs a GPU and ncu: {GPU_WHY}; {NCU_WHY}")
def test_saxpy_global_counts_match_the_emulator_exactly(tmp_path):
    # saxpy reference at N=50000 in blocks of 256: 1563 warps have an active lane, each loads
    # x and y once (3126 requests) and stores y once; 50000 * 4 B / 32 B = 6250 sectors per
    # array. These are the emulator's figures for the same run; a simple kernel must match.
    spec, family = find_task("saxpy")
    prof = ncu.profile_with_ncu(family.reference.source, spec, cache_dir=tmp_path)
    got = prof.kernels["saxpy_kernel"]
    assert got["launches"] == 1 and got["blocks"] == 196 and got["threads"] == 50176
    assert (got["global_load_requests"], got["global_load_sectors"]) == (3126, 12500)
    assert (got["global_store_requests"], got["global_store_sectors"]) == (1563, 6250)
