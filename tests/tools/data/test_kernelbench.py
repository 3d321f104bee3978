"""Extraction of inline CUDA from KernelBench-style Python files."""

from structcover.tools.data.kernelbench import extract_cuda_sources


def test_extracts_cuda_strings_in_order_and_skips_prose() -> None:
    text = (
        '"""A model. Mentions nothing."""\n'
        'cpp = "torch::Tensor f(torch::Tensor x);"\n'
        'cu = """#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n"""\n'
        'note = "plain words"\n'
    )
    found = extract_cuda_sources(text)
    assert found[0].startswith("torch::Tensor f")
    assert "__global__ void k" in found[1]
    assert len(found) == 2


def test_falls_back_to_triple_quoted_blocks_when_python_does_not_parse() -> None:
    text = 'def broken(:\nsrc = """__global__ void k() {}"""\n'
    assert extract_cuda_sources(text) == ["__global__ void k() {}"]
