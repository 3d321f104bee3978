"""The sandboxed profile child: ``python -m structcover.tools.kernelbench.profile_child JOB.json``.

Runs one KernelBench candidate whose extensions were built as the emulator's *profile variant*
(``cpu_build.build_cpu_extension(..., profile=True)``) once, on the reference's first trial
inputs, in the same jail and with the same CPU shims and seeding as verification
(:mod:`child`'s ``_prepare`` and ``_construct``), and writes the runtime's counters of the
launches ``forward`` made (``sc_profile_json``, read through ctypes from the shared emulator
runtime the extensions load) to ``result.json``::

    {"status": "ok", "launches": [...runtime rows...], "outputs": [{"dtype", "shape"}],
     "inputs": [...], "torch_ops": {op: {"launches", "read_bytes", "write_bytes"}}}

``torch_ops`` is the traffic of torch's own operators in ``forward`` (fills, copies: GPU work
the timed forward includes; :mod:`torch_traffic`).

A failure is ``{"status": "error", "failure", "detail"}`` as in :mod:`child`. Launches made
while the model was constructed are not counted (only ``forward``'s). Buffers are laid out
from an aligned start (:func:`_aligned_layout`), so sector counts are those of a GPU's
``cudaMalloc``-aligned buffers.
"""

from __future__ import annotations

import ctypes
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from structcover.tools.kernelbench.child import _construct, _import_file, _prepare, classify
from structcover.tools.kernelbench.child_io import _flatten, _load_inputs, _short
from structcover.tools.kernelbench.sizes import apply_sizes


def _counters(runtimes: list[str]) -> list[dict[str, Any]]:
    """The runtime's launch rows so far (``[]`` when no profile build was loaded).

    Every extension links the same runtime library (same soname), so the first that loads
    answers for all of them.
    """
    for path in runtimes:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        fn = lib.sc_profile_json
        fn.restype = ctypes.c_char_p
        text = fn() or b""
        return json.loads(text.decode()) if text else []
    return []


def _aligned_layout(runtimes: list[str]) -> None:
    """Buffers allocated from now on start at a page (``sc_configure`` with the reverse
    schedule's layout), as ``cudaMalloc``'s 256-byte alignment does; verification's default
    layout ends each buffer at its guard, which is only 16-byte aligned and would add a
    32-byte sector to many warp requests. The schedule itself still rotates per call."""
    for path in runtimes:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        lib.sc_configure.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_ulonglong,
                                     ctypes.c_double]
        lib.sc_configure(0, 1, 1, 60.0)
        return


def run_profile(job: dict[str, Any], folder: Path) -> dict[str, Any]:
    """One forward of ``ModelNew`` on trial 0's inputs; its launches' counters."""
    import torch

    problem, device = _prepare(job)
    try:
        cand = _import_file("kb_candidate", Path(job["candidate_file"]))
    except Exception as exc:  # noqa: BLE001 - the candidate's own failure is the reason
        return {"status": "error", "failure": "import-error",
                "detail": "importing the candidate: " + _short(exc)}
    if not hasattr(cand, "ModelNew"):
        return {"status": "error", "failure": "no-modelnew", "detail": "no ModelNew"}
    apply_sizes(cand.__dict__, job["sizes"], only_existing=True)  # the candidate's copies
    runtimes = [str(p) for p in job.get("runtimes", [])]
    _aligned_layout(runtimes)  # before the weights and inputs are allocated
    model = _construct(cand.ModelNew, problem, job["seed"], device)
    meta = json.loads((Path(job["inputs_dir"]) / "inputs.json").read_text())[0]
    inputs = _load_inputs(Path(job["inputs_dir"]) / "in_0.npz", meta, device)
    from structcover.tools.kernelbench.torch_traffic import TorchTrafficMeter

    before = len(_counters(runtimes))
    meter = TorchTrafficMeter()
    try:
        with torch.no_grad(), meter:
            outputs = _flatten(model(*inputs))
    except Exception as exc:  # noqa: BLE001
        return {"status": "error", "failure": classify(exc),
                "detail": "forward raised " + _short(exc)}
    rows = _counters(runtimes)[before:]
    outs = [{"dtype": str(o.dtype).removeprefix("torch."), "shape": list(o.shape)}
            for o in outputs if isinstance(o, torch.Tensor)]
    return {"status": "ok", "launches": rows, "outputs": outs, "inputs": meta,
            "torch_ops": meter.ops}


def main(argv: list[str]) -> int:
    """Run the job named by ``argv[0]``; always writes ``result.json`` unless killed."""
    job = json.loads(Path(argv[0]).read_text())
    folder = Path(job["out_dir"])
    try:
        result = run_profile(job, folder)
    except BaseException as exc:  # noqa: BLE001 - SystemExit from user code is a failure too
        result = {"status": "error", "failure": classify(exc), "detail": _short(exc),
                  "where": traceback.format_exc(limit=3)[-800:]}
    (folder / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
