"""NVML readings for the GPU runner: busy check, energy counter, power, clocks, temperature.

``nvidia-ml-py`` (module ``pynvml``) is optional: without it, or without a driver, every reading
is None and ``available`` is False with the reason.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass
class GpuSnapshot:
    """One NVML reading (None where the device or driver does not report it)."""

    power_w: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temperature_c: int | None = None

    def describe(self) -> str:
        """A short human-readable line."""
        parts = []
        if self.sm_clock_mhz is not None:
            parts.append(f"sm {self.sm_clock_mhz} MHz")
        if self.mem_clock_mhz is not None:
            parts.append(f"mem {self.mem_clock_mhz} MHz")
        if self.temperature_c is not None:
            parts.append(f"{self.temperature_c} C")
        if self.power_w is not None:
            parts.append(f"{self.power_w:.0f} W")
        return ", ".join(parts)


class NvmlMonitor:
    """NVML access to one GPU. Never raises: readings fail to None."""

    def __init__(self, index: int = 0) -> None:
        self.available = False
        self.reason = ""
        self._nv = None
        self._handle = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._nv = pynvml
            self.available = True
        except Exception as exc:  # noqa: BLE001 - missing package, library or driver
            self.reason = f"NVML unavailable: {type(exc).__name__}: {exc}"

    def _read(self, fn: str, *args: object) -> object | None:
        if not self.available:
            return None
        try:
            return getattr(self._nv, fn)(self._handle, *args)
        except Exception:  # noqa: BLE001 - not supported on this device
            return None

    def busy_reason(self, threshold_pct: int = 5) -> str | None:
        """Why timing now would be unfair (another process keeps the GPU busy), or None.

        Call it before this process opens its own context, so its own activity cannot count.
        """
        util = self._read("nvmlDeviceGetUtilizationRates")
        procs = self._read("nvmlDeviceGetComputeRunningProcesses") or []
        others = [p.pid for p in procs if getattr(p, "pid", None) != os.getpid()]
        if util is not None and util.gpu > threshold_pct:
            return (f"GPU {util.gpu}% utilised by another process (threshold {threshold_pct}%); "
                    f"compute processes: {others or 'unknown'}")
        return None

    def energy_mj(self) -> int | None:
        """Total energy counter in millijoules since driver load (Volta and later)."""
        value = self._read("nvmlDeviceGetTotalEnergyConsumption")
        return int(value) if value is not None else None

    def snapshot(self) -> GpuSnapshot:
        """Power, clocks and temperature now."""
        power = self._read("nvmlDeviceGetPowerUsage")
        nv = self._nv
        sm = self._read("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_SM) if nv else None
        mem = self._read("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_MEM) if nv else None
        temp = self._read("nvmlDeviceGetTemperature", nv.NVML_TEMPERATURE_GPU) if nv else None
        return GpuSnapshot(power_w=power / 1000.0 if power is not None else None,
                           sm_clock_mhz=sm, mem_clock_mhz=mem, temperature_c=temp)

    def close(self) -> None:
        """Shut NVML down."""
        if self.available:
            try:
                self._nv.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass
            self.available = False
