"""Spec table of the GPUs the timing model knows: peak rates, bandwidths, SM count and limits.

Every figure comes from a public source named in ``docs/GPU_SPECS.md`` (NVIDIA datasheets and
architecture whitepapers, the CUDA C++ Programming Guide's compute-capability and throughput
tables); each :class:`GpuSpec` also carries, per field, how the figure was obtained
(:data:`STATUS`): ``sourced`` (read from a public source), ``derived`` (computed from sourced
figures, the formula in the docs) or ``unverified`` (a commonly quoted figure whose primary
source could not be checked here). Per-SM limits are not repeated: they are the compute
capability's row of :data:`structcover.tools.compiler.occupancy.ARCH_LIMITS`, which the
occupancy calculator already uses.

Rates are dense (no 2:4 sparsity), at the boost clock. Shared-memory bandwidth is derived:
32 banks x 4 bytes per clock per SM (one wavefront per clock), times SMs and boost clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from structcover.tools.compiler.occupancy import ArchLimits, arch_limits

#: How a figure was obtained (see the module docstring).
STATUS = ("sourced", "derived", "unverified")


@dataclass(frozen=True)
class GpuSpec:
    """One GPU's figures (units in the field names; rates in operations per second)."""

    name: str
    arch: str
    sms: int
    boost_clock_hz: float
    fp32_flops: float
    fp64_flops: float
    fp16_flops: float
    bf16_flops: float
    int32_ops: float
    tensor_fp16_flops: float
    dram_bytes_per_s: float
    l2_bytes: float
    #: Special-function results per clock per SM (CUDA guide throughput table: 16 on 8.x/9.0).
    sfu_per_clock_per_sm: int = 16
    warp_schedulers_per_sm: int = 4
    shared_banks: int = 32
    #: Field -> "sourced" / "derived" / "unverified" (fields not listed: sourced).
    status: dict[str, str] = field(default_factory=dict)

    @property
    def limits(self) -> ArchLimits:
        """Per-SM limits of this GPU's compute capability (threads, blocks, registers, smem)."""
        return arch_limits(self.arch)

    @property
    def shared_bytes_per_s(self) -> float:
        """Derived: banks x 4 B per clock per SM x SMs x boost clock."""
        return self.shared_banks * 4.0 * self.sms * self.boost_clock_hz

    @property
    def sfu_ops(self) -> float:
        """Derived: special-function results per second (per-SM rate x SMs x clock)."""
        return float(self.sfu_per_clock_per_sm) * self.sms * self.boost_clock_hz

    def status_of(self, name: str) -> str:
        """How the figure ``name`` was obtained."""
        if name in ("shared_bytes_per_s", "sfu_ops"):
            return "derived"
        return self.status.get(name, "sourced")


def _int32(sms: int, clock_hz: float) -> float:
    """Derived: 32-bit integer add results per second, 64 per clock per SM (CUDA C++
    Programming Guide, arithmetic-instruction throughput table, compute capability 8.x/9.0)."""
    return 64.0 * sms * clock_hz


T = 1e12
GB = 1e9
MB = 1 << 20

#: The table (keys are what ``--gpu`` and :func:`gpu_spec` accept).
GPUS: dict[str, GpuSpec] = {
    "h100-sxm": GpuSpec(
        name="NVIDIA H100 SXM5 80GB", arch="sm_90", sms=132, boost_clock_hz=1.98e9,
        fp32_flops=66.9 * T, fp64_flops=33.5 * T, fp16_flops=133.8 * T, bf16_flops=133.8 * T,
        int32_ops=_int32(132, 1.98e9), tensor_fp16_flops=989.4 * T, dram_bytes_per_s=3350 * GB,
        l2_bytes=50 * MB, status={"int32_ops": "derived"}),
    "a100-sxm-80gb": GpuSpec(
        name="NVIDIA A100 SXM4 80GB", arch="sm_80", sms=108, boost_clock_hz=1.41e9,
        fp32_flops=19.5 * T, fp64_flops=9.7 * T, fp16_flops=78 * T, bf16_flops=39 * T,
        int32_ops=_int32(108, 1.41e9), tensor_fp16_flops=312 * T, dram_bytes_per_s=2039 * GB,
        l2_bytes=40 * MB, status={"int32_ops": "derived"}),
    "l40s": GpuSpec(
        name="NVIDIA L40S", arch="sm_89", sms=142, boost_clock_hz=2.52e9,
        fp32_flops=91.6 * T, fp64_flops=1.431 * T, fp16_flops=91.6 * T, bf16_flops=91.6 * T,
        int32_ops=_int32(142, 2.52e9), tensor_fp16_flops=362.05 * T, dram_bytes_per_s=864 * GB,
        l2_bytes=48 * MB, status={"fp64_flops": "derived", "int32_ops": "derived",
                                  "l2_bytes": "unverified", "fp16_flops": "unverified",
                                  "bf16_flops": "unverified"}),
    "rtx4090": GpuSpec(
        name="NVIDIA GeForce RTX 4090", arch="sm_89", sms=128, boost_clock_hz=2.52e9,
        fp32_flops=82.6 * T, fp64_flops=82.6 * T / 64, fp16_flops=82.6 * T,
        bf16_flops=82.6 * T, int32_ops=_int32(128, 2.52e9), tensor_fp16_flops=165.2 * T,
        dram_bytes_per_s=1008 * GB, l2_bytes=72 * MB,
        status={"fp64_flops": "derived", "fp16_flops": "derived", "bf16_flops": "derived",
                "int32_ops": "derived", "tensor_fp16_flops": "unverified",
                "l2_bytes": "unverified"}),
    "rtx3090": GpuSpec(
        name="NVIDIA GeForce RTX 3090", arch="sm_86", sms=82, boost_clock_hz=1.695e9,
        fp32_flops=35.6 * T, fp64_flops=35.6 * T / 64, fp16_flops=35.6 * T,
        bf16_flops=35.6 * T, int32_ops=_int32(82, 1.695e9), tensor_fp16_flops=35.6 * T,
        dram_bytes_per_s=936 * GB, l2_bytes=6 * MB,
        status={"sms": "derived", "boost_clock_hz": "derived", "dram_bytes_per_s": "unverified",
                "fp64_flops": "derived",
                "fp16_flops": "derived", "bf16_flops": "derived", "int32_ops": "derived",
                "tensor_fp16_flops": "unverified"}),
}

#: The GPU the simulator and the demo model by default.
DEFAULT_GPU = "h100-sxm"


def gpu_spec(name: str = DEFAULT_GPU) -> GpuSpec:
    """The spec named ``name`` (a key of :data:`GPUS`, case-insensitive).

    Raises:
        ValueError: Unknown name; the message lists the known ones.
    """
    key = name.strip().lower()
    if key not in GPUS:
        raise ValueError(f"unknown GPU {name!r}; known: {', '.join(sorted(GPUS))}")
    return GPUS[key]
