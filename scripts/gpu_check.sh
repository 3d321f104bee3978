#!/usr/bin/env bash
# Every GPU check in one run, under 8 minutes on one GPU (issue 5):
#   1. all tests marked `gpu` (they skip without a GPU, so run this only where one is present);
#   2. the CPU-emulator-vs-GPU cross-check on the whole sample corpus;
#   3. the timing-spread benchmark (cv over 100 trials, L2 flushed, NVML energy).
# Results go to bench/results/. Exit code: non-zero if any step failed.
# Needs the `gpu` extra (cuda-bindings, nvidia-ml-py) and nvcc (toolkit or the `cuda` extra).
set -u
cd "$(dirname "$0")/.."
if [ -f .venv/bin/activate ]; then source .venv/bin/activate; fi
mkdir -p bench/results
status=0
start=$(date +%s)
python - <<'PY' | tee bench/results/gpu_env.txt
from structcover.tools.verify.gpu_runner import GpuBackend
from structcover.tools.verify.select import CpuBackend
print("gpu:", GpuBackend().available())
print("cpu:", CpuBackend().available())
PY
timeout 150 python -m pytest -m gpu tests -q -rs -p no:cacheprovider 2>&1 \
    | tee bench/results/gpu_tests.txt || status=1
timeout 170 python bench/cross_check_gpu_cpu.py --out bench/results/gpu_cpu_crosscheck.json \
    || status=1
timeout 150 python bench/bench_gpu_timing.py --out bench/results/gpu_timing.json || status=1
echo "gpu_check: $(( $(date +%s) - start )) s, status $status" | tee -a bench/results/gpu_env.txt
exit $status
