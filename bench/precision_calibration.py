"""Calibration of the KernelBench precision check's K (tools/kernelbench/precision.py).

For each operation class at the CPU path's shrunk sizes (reductions, GEMMs, softmax, scans,
norms, elementwise), computes the torch CPU reference ``r`` (float32), its float64 run ``r64``
and candidates: honest float32 programs in other orders (serial, a GPU-like block reduction,
fast exp) and downgrades (inputs rounded to float16 or bfloat16, accumulation in float16,
outputs rounded or mantissa-masked to float16). Prints each candidate's ratio
``||c - r64|| / max(||r - r64||, u * ||r64||)`` and, at the end, the largest honest ratio and
the smallest downgrade ratio outside the cases no behavioural check can see (see the doc's
"What it cannot catch"). Like the verifier, each ratio pools three trials (three input
draws); ``--runs`` such verifications per case give each case's range. K must sit between the
two extremes.

    python bench/precision_calibration.py [--runs 8]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch

from structcover.tools.kernelbench.precision import PRECISION_FACTOR

F16, F32, F64 = np.float16, np.float32, np.float64
U32 = 2.0 ** -24


def serial_sum(x: np.ndarray, dtype: type = F32) -> np.ndarray:
    """Last-axis sums added left to right in ``dtype`` (one thread's loop)."""
    return np.add.accumulate(x.astype(dtype), axis=-1, dtype=dtype)[..., -1]


def block_sum(x: np.ndarray, threads: int = 256, dtype: type = F32) -> np.ndarray:
    """A GPU block reduction: each thread sums a stride serially, then a tree over threads."""
    pad = (-x.shape[-1]) % threads
    xp = np.concatenate([x.astype(dtype), np.zeros(x.shape[:-1] + (pad,), dtype)], -1)
    acc = np.add.accumulate(xp.reshape(x.shape[:-1] + (-1, threads)), axis=-2,
                            dtype=dtype)[..., -1, :]
    while acc.shape[-1] > 1:
        half = acc.shape[-1] // 2
        acc = (acc[..., :half] + acc[..., half:]).astype(dtype)
    return acc[..., 0]


def mask16(x: np.ndarray) -> np.ndarray:
    """float32 values cut to float16's 10-bit mantissa (``& 0xFFFFE000``)."""
    return (np.asarray(x, F32).view(np.uint32) & np.uint32(0xFFFFE000)).view(F32)


#: Trials per verification (``verify_kernelbench``'s default): the rule pools them.
TRIALS = 3
Sums = tuple[float, float, float]


def squares(c: np.ndarray, r: np.ndarray, r64: np.ndarray) -> Sums:
    """``(||c - r64||^2, ||r - r64||^2, ||r64||^2)`` of one trial."""
    c, r, r64 = (np.asarray(a, F64) for a in (c, r, r64))
    return float(np.sum((c - r64) ** 2)), float(np.sum((r - r64) ** 2)), float(np.sum(r64 ** 2))


def ratio(trials: list[Sums]) -> float:
    """``||c - r64|| / max(||r - r64||, u ||r64||)`` over pooled trials (float32 task)."""
    err, ref, norm = (sum(t[i] for t in trials) for i in range(3))
    return float(np.sqrt(err) / max(np.sqrt(ref), U32 * np.sqrt(norm)))


def t(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x))


def reference(op: Callable[[torch.Tensor], torch.Tensor], *xs: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """The torch CPU reference in float32 and in float64."""
    return (op(*map(t, xs)).numpy(), op(*(t(x).double() for x in xs)).numpy())


def cases(seed: int) -> list[tuple[str, str, str, Sums]]:
    """(operation, candidate, honest|downgrade|invisible, squared sums) of one trial."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[str, str, str, Sums]] = []

    def add(op: str, r: np.ndarray, r64: np.ndarray, **kinds: dict[str, np.ndarray]) -> None:
        for kind, cands in kinds.items():
            rows.extend((op, name, kind, squares(c, r, r64)) for name, c in cands.items())

    for n, dist in [(64, "randn"), (1531, "randn"), (4000, "randn"), (3855, "rand"),
                    (32761, "rand"), (65536, "randn")]:
        x = (rng.standard_normal((8, n)) if dist == "randn" else rng.random((8, n))).astype(F32)
        r, r64 = reference(lambda v: v.sum(-1), x)
        downgrade = {"fp16 accumulation (block)": block_sum(x, dtype=F16),
                     "output rounded to fp16": r.astype(F16), "output mantissa mask": mask16(r)}
        inputs = {"inputs rounded to fp16": serial_sum(x.astype(F16).astype(F32)),
                  "inputs rounded to bf16": serial_sum(t(x).bfloat16().float().numpy())}
        # Same-sign terms average input rounding out: as accurate as an honest serial sum.
        if dist == "rand":
            add(f"sum n={n} {dist}", r, r64, invisible=inputs)
        else:
            downgrade.update(inputs)
        add(f"sum n={n} {dist}", r, r64,
            honest={"serial": serial_sum(x), "block256": block_sum(x)}, downgrade=downgrade)
    for m, k, n in [(181, 181, 181), (16, 2048, 16), (70, 45, 83), (16, 3855, 1)]:
        a, b = rng.standard_normal((m, k)).astype(F32), rng.standard_normal((k, n)).astype(F32)
        r, r64 = reference(torch.matmul, a, b)
        serial = np.add.accumulate(a[:, :, None] * b[None, :, :], axis=1, dtype=F32)[:, -1, :]
        add(f"gemm {m}x{k}x{n}", r, r64, honest={"serial, no fma": serial},
            downgrade={"inputs rounded to fp16": t(a).half().float().numpy()
                       @ t(b).half().float().numpy(),
                       "inputs rounded to tf32": mask16(a) @ mask16(b),
                       "output mantissa mask": mask16(r)})
    x = (rng.standard_normal((26, 2520)) * 4).astype(F32)
    r, r64 = reference(lambda v: torch.softmax(v, -1), x)

    def softmax(v: np.ndarray, dtype: type = F32, total: Callable = serial_sum,
                exp: Callable = np.exp) -> np.ndarray:
        e = exp((v - v.max(-1, keepdims=True)).astype(dtype)).astype(dtype)
        return (e / total(e)[..., None].astype(dtype)).astype(dtype)

    def fast_exp(z: np.ndarray) -> np.ndarray:  # __expf: exp2 of a rounded product
        return np.exp2((z * F32(1.4426950408889634)).astype(F32)).astype(F32)

    add("softmax 26x2520", r, r64,
        honest={"serial sum": softmax(x), "block sum": softmax(x, total=block_sum),
                "fast exp": softmax(x, exp=fast_exp)},
        downgrade={"exp in fp16, fp32 sum": softmax(x.astype(F16), F16,
                                                    lambda e: serial_sum(e, F32)).astype(F32),
                   "output mantissa mask": mask16(r)})
    x = (rng.standard_normal((26, 2520)) * 3).astype(F32)
    for name, fn in [("sigmoid", torch.sigmoid), ("tanh", torch.tanh),
                     ("gelu", torch.nn.functional.gelu), ("relu", torch.relu)]:
        r, r64 = reference(fn, x)
        honest = {"1/(1+exp(-x))": (F32(1) / (F32(1) + np.exp(-x))).astype(F32)} \
            if name == "sigmoid" else {}
        add(name, r, r64, honest=honest,
            downgrade={"computed in fp16": fn(t(x).half()).float().numpy(),
                       "output mantissa mask": mask16(r)})
    x = rng.random(65536).astype(F32)
    r, r64 = reference(lambda v: v / torch.norm(v, p="fro"), x)
    add("frobenius 65536 rand", r, r64,
        honest={"serial sum of squares": x / np.sqrt(serial_sum(x * x)).astype(F32),
                "block sum of squares": x / np.sqrt(block_sum(x * x)).astype(F32)},
        downgrade={"fp16 block accumulation": x / np.sqrt(block_sum(x * x, dtype=F16)
                                                          .astype(F32)),
                   "output mantissa mask": mask16(r)})
    p, q = (rng.random((181, 181)) * 0.7).astype(F32), rng.random((181, 181)).astype(F32)
    r, r64 = reference(torch.nn.functional.smooth_l1_loss, p, q)
    d = np.abs(p - q)
    terms = np.where(d < 1, 0.5 * d * d, d - 0.5).astype(F32).reshape(-1)
    add("huber loss scalar 32761", r, r64,
        honest={"serial mean": serial_sum(terms) / F32(terms.size),
                "block mean": block_sum(terms) / F32(terms.size)},
        downgrade={"fp16 block accumulation": block_sum(terms, dtype=F16).astype(F32)
                   / F32(terms.size), "output mantissa mask": mask16(r)})
    x = rng.standard_normal((256, 256)).astype(F32)
    r, r64 = reference(lambda v: torch.cumsum(v, 1), x)
    add("cumsum 256x256", r, r64, honest={"serial scan": np.cumsum(x, 1, dtype=F32)},
        downgrade={"fp16 scan": np.cumsum(x.astype(F16), 1, dtype=F16).astype(F32),
                   "output mantissa mask": mask16(r)})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print every case's range over the draws, then the two extremes and where K sits."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8, help="verifications (of 3 trials) per case")
    args = ap.parse_args(argv)
    trials: dict[tuple[str, str, str], list[Sums]] = {}
    for seed in range(args.runs * TRIALS):
        for op, name, kind, sums in cases(seed):
            trials.setdefault((op, name, kind), []).append(sums)
    spans = {case: [ratio(sums[i:i + TRIALS]) for i in range(0, len(sums), TRIALS)]
             for case, sums in trials.items()}
    rows = [(*case, q) for case, qs in spans.items() for q in qs]
    for (op, name, kind), qs in spans.items():
        print(f"{op:26s} {name:28s} {kind:10s} {min(qs):10.1f} .. {max(qs):10.1f}")
    honest = max((q, op, name) for op, name, kind, q in rows if kind == "honest")
    caught = min((q, op, name) for op, name, kind, q in rows if kind == "downgrade")
    print(f"\nlargest honest ratio   {honest[0]:8.1f}  ({honest[1]}: {honest[2]})")
    print(f"smallest downgrade     {caught[0]:8.1f}  ({caught[1]}: {caught[2]})")
    print(f"K = {PRECISION_FACTOR:g}: {PRECISION_FACTOR / honest[0]:.1f}x above the first, "
          f"{caught[0] / PRECISION_FACTOR:.1f}x below the second")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
