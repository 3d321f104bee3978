"""A program's modelled time on a task: its measured profile through the timing model.

``program_time(entry, spec, gpu)`` extrapolates the profile's per-kernel counters from the two
measured sizes to the model's size (``profiles.target_sizes``: the largest buffer at
``profiles.TARGET_ELEMENTS``), attributes the task's compulsory bytes and useful FLOPs to the
kernels (bytes by each kernel's share of global sector traffic, FLOPs by its share of global +
shared requests: the task's work is known, its split between kernels is not), takes each
kernel's registers and shared memory from ptxas for the GPU's architecture, and sums
:func:`timing_model.kernel_time` over the kernels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from structcover.schema import TaskSpec
from structcover.tools.simulation.gpu_specs import GpuSpec
from structcover.tools.simulation.profiles import (
    MeasuredProfile,
    extrapolate,
    target_scale,
    target_sizes,
    work_at,
)
from structcover.tools.simulation.timing_model import (
    DTYPE_RATE,
    KernelInputs,
    KernelTime,
    kernel_time,
)

#: ``reward_source`` of a row whose time comes from this model.
MODELLED = "modelled"


class NoProfile(ValueError):
    """The program has no usable profile (the message says why)."""


@dataclass
class ProgramTime:
    """Modelled time of one program on one task."""

    seconds: float
    kernels: dict[str, KernelTime]
    sizes: dict[str, int]
    notes: list[str] = field(default_factory=list)


def _base(name: str) -> str:
    return re.sub(r"<.*>$", "", name).split("::")[-1].split("(")[0].strip()


def _resources(entry: MeasuredProfile, arch: str, kernel: str,
               kernels: list[str]) -> tuple[int | None, int | None]:
    """(registers, static smem) ptxas gave ``kernel`` on ``arch``: by name, base name, or the
    only kernel; (None, None) when ptxas said nothing about it."""
    table = entry.ptxas.get(arch, {})
    row = table.get(kernel) or next((v for k, v in table.items() if _base(k) == _base(kernel)),
                                    None)
    if row is None and len(table) == 1 and len(kernels) == 1:
        row = next(iter(table.values()))
    if row is None:
        return None, None
    return int(row["registers"]), int(row["smem_bytes"])


def program_time(entry: MeasuredProfile, spec: TaskSpec, gpu: GpuSpec) -> ProgramTime:
    """Modelled seconds of the profiled program on ``spec`` at the model's size on ``gpu``.

    Raises:
        NoProfile: The profile failed (its reason) or recorded no kernel.
    """
    if entry.error:
        raise NoProfile(entry.error)
    counters = extrapolate(entry, spec, target_scale(spec))
    if not counters:
        raise NoProfile("profile recorded no kernel launch")
    sizes = target_sizes(spec)
    compulsory, flops, _ = work_at(spec, sizes)
    out_dtype = next((t.dtype for t in spec.tensors if t.role != "input"), "float32")
    rate = DTYPE_RATE.get(out_dtype, "fp32_flops")
    sectors = {k: v.get("global_load_sectors", 0.0) + v.get("global_store_sectors", 0.0)
               for k, v in counters.items()}
    requests = {k: v.get("global_load_requests", 0.0) + v.get("shared_load_requests", 0.0)
                + v.get("global_store_requests", 0.0) for k, v in counters.items()}
    total_sectors, total_requests = sum(sectors.values()), sum(requests.values())
    names = list(counters)
    times: dict[str, KernelTime] = {}
    notes: list[str] = []
    for name, row in counters.items():
        regs, smem = _resources(entry, gpu.arch, name, names)
        share_b = sectors[name] / total_sectors if total_sectors else 1.0 / len(names)
        share_f = requests[name] / total_requests if total_requests else 1.0 / len(names)
        times[name] = kernel_time(KernelInputs(counters=row, registers=regs, smem_bytes=smem,
                                               flops=flops * share_f,
                                               compulsory_bytes=compulsory * share_b,
                                               rate=rate), gpu)
        notes += [f"{name}: {n}" for n in times[name].notes]
    return ProgramTime(seconds=sum(t.seconds for t in times.values()), kernels=times,
                       sizes=sizes, notes=notes)


def reward_label(gpu: GpuSpec) -> str:
    """What ``demo --json`` and the simulator say about where modelled rewards come from."""
    return (f"modelled: timing model (tools/simulation/timing_model.py) over measured CPU "
            f"emulator counters, GPU spec {gpu.name}")
