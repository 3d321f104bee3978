"""KernelBench-format tasks: problem files, candidate files, and their verification (docs/KERNELBENCH.md)."""
