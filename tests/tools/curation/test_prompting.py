import json

import pandas as pd
import pytest

from structcover.schema import TaskSpec, Verdict
from structcover.tools.coverage.labels import parse_bin_label
from structcover.tools.curation.prompting import (
    constraint_sentences,
    export_rl_tasks,
    feedback_lines,
    fill,
    gap_to_rl_row,
    render_generate,
    render_retry,
)

TASK = TaskSpec.model_validate({
    "task_id": "scale", "family": "scale", "description": "y = 2 * x for N floats.",
    "sizes": {"N": 1000},
    "args": [{"name": "x", "kind": "tensor", "shape": ["N"], "role": "input"},
             {"name": "y", "kind": "tensor", "shape": ["N"], "role": "output"},
             {"name": "n", "kind": "scalar", "ctype": "int", "value": "N"}]})

LABEL = "smem.tiled=1,mem.coalesced_fraction=[0.9,1.0],warp.shuffles=[0.5,3.5),loop.grid_stride=0"

PINNED = """You are writing a CUDA program for the task `scale`.

## Task
y = 2 * x for N floats.

Default sizes: N=1000

## Launcher
The program is one .cu file. It must define exactly this host launcher, receiving device
pointers, the sizes and a stream; it launches its own kernels on that stream with the grid and
block it chooses and returns `(int)cudaGetLastError()`:

    extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream);

## Structural constraints (every one must hold)
1. Stage the reused operand in shared-memory tiles: load a tile cooperatively, \
__syncthreads(), compute from shared memory, __syncthreads() before the next tile.
2. Make between 90% and 100% of global accesses coalesced (unit stride in threadIdx.x); \
the rest strided.
3. Use between 1 and 3 warp shuffles (__shfl_*_sync).
4. `loop.grid_stride` (grid-stride loops (step involves gridDim)) must be 0.

## Rules
"""


def test_rendered_prompt_is_pinned():
    text = render_generate(TASK, parse_bin_label(LABEL))
    assert text.startswith(PINNED)
    assert text.rstrip().endswith("in a single ```cuda code block.")


def test_count_ranges_become_integers_and_flags_become_sentences():
    s = constraint_sentences(parse_bin_label("sync.block_barriers=[0.5,2.5),smem.tiled=0,"
                                             "compiler.registers=[0,64]"))
    assert s[0] == "Use between 1 and 2 __syncthreads() barriers."
    assert s[1] == "Do not stage data in shared-memory tiles."
    assert s[2] == "Use at most 64 registers per thread."


def test_missing_template_variable_raises():
    with pytest.raises(KeyError, match="missing template variable 'previous_program'"):
        fill("synthesizer_retry", task_id="t", task_description="d", sizes="", signature="s",
             constraints="c", feedback="f")


def test_retry_prompt_carries_structured_feedback():
    verdict = Verdict(program_id="p", compiled=True, equivalent=False, failure="mismatch",
                      max_abs_error=0.5, first_mismatch=[17])
    text = render_retry(TASK, parse_bin_label("smem.tiled=1"), "__global__ void k() {}", verdict,
                        ["smem.tiled: wanted 1, got 0"])
    assert "__global__ void k() {}" in text
    assert "- wrong result (mismatch) at index [17], max abs error 0.5" in text
    assert "- structure missed the bin: smem.tiled: wanted 1, got 0" in text
    bad = Verdict(program_id="p", compiled=False, compile_log="x.cu(3): error: expected a ;")
    assert feedback_lines(bad) == ["compile error: x.cu(3): error: expected a ;"]


def test_gap_exports_as_verl_rl_task(tmp_path):
    row = gap_to_rl_row(TASK, "smem.tiled=1", parse_bin_label("smem.tiled=1"), index=3)
    truth = json.loads(row["reward_model"]["ground_truth"])
    assert truth["task_spec"]["task_id"] == "scale" and truth["target_bin"] == "smem.tiled=1"
    assert row["prompt"][0]["role"] == "user"
    assert "shared-memory tiles" in row["prompt"][0]["content"]
    df = pd.read_parquet(export_rl_tasks([row], tmp_path / "rl.parquet"))
    assert list(df.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert df.loc[0, "extra_info"]["index"] == 3
    with pytest.raises(ValueError, match="parquet or .jsonl"):
        export_rl_tasks([row], tmp_path / "rl.csv")


def test_gap_rows_share_one_schema_for_corpus_and_unknown_tasks():
    bounds = parse_bin_label("smem.tiled=1")
    known = gap_to_rl_row("saxpy", "smem.tiled=1", bounds)
    unknown = gap_to_rl_row("my_task", "smem.tiled=1", bounds, index=2,
                            extra={"gap_kind": "zero"})
    tk = json.loads(known["reward_model"]["ground_truth"])
    tu = json.loads(unknown["reward_model"]["ground_truth"])
    assert set(tk) == set(tu) == {"task_id", "task_spec", "target_bin", "constraints"}
    assert tk["task_spec"]["task_id"] == "saxpy" and tu["task_spec"] is None
    assert tu["task_id"] == "my_task" and tu["constraints"]["smem.tiled"]["feature"] == "smem.tiled"
    assert "launch" in known["prompt"][0]["content"]  # the corpus spec's launcher is demanded
    assert "smem.tiled = 1" in unknown["prompt"][0]["content"]
    assert unknown["extra_info"] == {"index": 2, "split": "train", "task_id": "my_task",
                                     "target_bin": "smem.tiled=1", "gap_kind": "zero"}


def _kernelbench_task(tmp_path, text="class Model(nn.Module):\n    def forward(self, x):\n"
                      "        return torch.relu(x)\n"):
    problem = tmp_path / "19_ReLU.py"
    problem.write_text(text)
    return TaskSpec(task_id="19_ReLU", kind="kernelbench", problem=str(problem), args=[],
                    sizes={"batch_size": 16}, family="kernelbench")


def test_a_kernelbench_gap_asks_for_model_new_against_the_problem(tmp_path):
    task = _kernelbench_task(tmp_path)
    bounds = parse_bin_label("warp.shuffles=[0.5,3.5)")
    text = render_generate(task, bounds)
    assert "return torch.relu(x)" in text  # the problem file, for the model to reproduce
    assert "class ModelNew(torch.nn.Module)" in text and "load_inline" in text
    assert "1. Use between 1 and 3 warp shuffles (__shfl_*_sync)." in text
    assert "launch(" not in text and ".cu file" not in text  # not the corpus's launcher prompt
    assert text.rstrip().endswith("in a single ```python code block.")
    retry = render_retry(task, bounds, "class ModelNew: ...", Verdict(
        program_id="p", compiled=True, equivalent=False, failure="mismatch"))
    assert "class ModelNew: ..." in retry and "- wrong result (mismatch)" in retry
    assert "return torch.relu(x)" in retry and "```python" in retry


def test_a_kernelbench_gap_row_carries_the_problem_for_the_trainers_scorer(tmp_path):
    task = _kernelbench_task(tmp_path)
    row = gap_to_rl_row(task, "warp.shuffles=[0.5,3.5)",
                        parse_bin_label("warp.shuffles=[0.5,3.5)"))
    truth = json.loads(row["reward_model"]["ground_truth"])
    assert truth["problem_source"] == (tmp_path / "19_ReLU.py").read_text()
    assert truth["task_spec"]["kind"] == "kernelbench" and truth["task_id"] == "19_ReLU"
    assert "ModelNew" in row["prompt"][0]["content"]


def test_an_unreadable_problem_file_is_named(tmp_path):
    task = _kernelbench_task(tmp_path)
    (tmp_path / "19_ReLU.py").unlink()
    with pytest.raises(ValueError, match=r"19_ReLU: cannot read its problem file .*19_ReLU\.py"):
        render_generate(task, parse_bin_label("smem.tiled=1"))
