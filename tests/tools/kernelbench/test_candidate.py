"""find_inline_extensions: load_inline's arguments resolved statically, or a clear error."""

import pytest

from structcover.tools.kernelbench.candidate import InlineExtension, UnresolvedInline, find_inline_extensions

SRC = '''
import torch
import torch.utils.cpp_extension as ce
from torch.utils.cpp_extension import load_inline as li

HEADER = "#include <torch/extension.h>\\n"
kernel = HEADER + """__global__ void k(float* x) { x[threadIdx.x] = 0; }
torch::Tensor f(torch::Tensor x) { return x; }"""
decl = "torch::Tensor f(torch::Tensor x);"

a = li(name="ext_a", cpp_sources=decl, cuda_sources=[kernel], functions=["f"], verbose=True)
b = torch.utils.cpp_extension.load_inline("ext_b", [decl], kernel, functions={"f": "doc"},
                                          extra_cuda_cflags=["-O3"])
c = ce.load_inline(name=f"ext_c", cpp_sources=decl, cuda_sources=(kernel,), functions="f")
'''


def test_every_call_form_resolves_to_the_same_text():
    exts = find_inline_extensions(SRC)
    assert [e.name for e in exts] == ["ext_a", "ext_b", "ext_c"]
    assert [e.line for e in exts] == [11, 12, 14]
    for ext in exts:
        assert ext.cpp_sources == ["torch::Tensor f(torch::Tensor x);"]
        assert ext.cuda_sources[0].startswith("#include <torch/extension.h>\n__global__ void k")
        assert ext.functions == ["f"]
    assert exts[1].extra_cuda_cflags == ["-O3"]


def test_key_of_the_static_scan_equals_the_run_time_call():
    ext = find_inline_extensions(SRC)[0]
    kernel = ext.cuda_sources[0]
    runtime = InlineExtension.from_call("ext_a", "torch::Tensor f(torch::Tensor x);",
                                        [kernel], ["f"], verbose=True)
    assert runtime.key() == ext.key()
    changed = InlineExtension.from_call("ext_a", "torch::Tensor f(torch::Tensor x);",
                                        [kernel + " "], ["f"])
    assert changed.key() != ext.key()


def test_pure_torch_candidate_has_no_extension():
    assert find_inline_extensions("import torch\nclass ModelNew: pass\n") == []


@pytest.mark.parametrize(("body", "what"), [
    ("load_inline(name='e', cpp_sources=open('k.cu').read())", "`cpp_sources`"),
    ("src = 'a'\nsrc += 'b'\nload_inline(name='e', cpp_sources=src)", "`cpp_sources`"),
    ("n = 3\nload_inline(name='e', cpp_sources=f'int x = {n};')", "f-string"),
    ("load_inline(**{'name': 'e'})", "**kwargs"),
    ("load_inline(cpp_sources='x')", "without a `name`"),
])
def test_text_built_at_run_time_is_an_error_naming_the_line(body, what):
    src = "from torch.utils.cpp_extension import load_inline\n" + body + "\n"
    with pytest.raises(UnresolvedInline) as err:
        find_inline_extensions(src)
    assert what in str(err.value)
    assert f"line {src.count(chr(10))}" in str(err.value)


def test_not_python_is_an_error():
    with pytest.raises(UnresolvedInline, match="not valid Python"):
        find_inline_extensions("__global__ void k() {}")


@pytest.mark.parametrize("rebinding", [
    "for src in ['a']: pass",
    "def src(): pass",
    "class src: pass",
    "def f():\n    global src\n    src = 'b'",
    "[src for src in 'ab']",
    "(src := 'b')",
    "src: str = 'b'",
    "a, (b, src) = 1, (2, 'c')",
])
def test_a_name_rebound_anywhere_has_no_static_value(rebinding):
    src = ("from torch.utils.cpp_extension import load_inline\nsrc = 'x'\n" + rebinding
           + "\nload_inline(name='e', cpp_sources=src)\n")
    with pytest.raises(UnresolvedInline, match="not bound once"):
        find_inline_extensions(src)
