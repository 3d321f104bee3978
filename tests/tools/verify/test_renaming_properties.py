"""Issue 27: renaming, re-declaring or aliasing an API that a check stops does not get it through.

Each row of the API tables is an API a check stops, a minimal program that uses it and the task
it is judged for; each disguise rewrites that use (a macro, token pasting, a function pointer or
reference, ``decltype``, a type alias, a template or lambda wrapper, ``std::function``, a
``using`` directive or declaration, a namespace alias, an ``asm`` label, a ``weakref``, a
renaming pragma, ``dlopen``/``dlsym``; in Python an import alias, ``getattr`` with a built name,
``vars``/``__dict__``/``sys.modules``, ``operator``, a value held on ``self``, in a default
argument, a lambda, a partial, a tuple ...). Hypothesis draws the identifiers, where names and
strings are split and some harmless noise; the property is that the verdict of the cheapest
layer meant to stop the API still rejects: the static checks (``run_checks``, which the RL
reward gates on) for text, the link check for what only a compiled object shows.

The negative property: honest programs whose kernels, locals and fields are named like pieces
of those APIs (``stream``, ``thread``, ``handle``, ``blockDim``, ``clock``, ``matmul`` ...) are
not rejected: the checks resolve names, they do not fire on spelling. ``KNOWN_HOLES`` lists,
as strict xfails, the spellings the text checks still let through and which layer stops them.
"""

from __future__ import annotations

import ast
import keyword
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structcover.schema import TaskSpec
from structcover.tools.verify.hacking import hard_failures, run_checks

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import needs_cxx, session_cache  # noqa: E402

#: Deterministic in CI; few examples per (API, disguise) pair, which are many.
PAIR = settings(max_examples=2, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])
SQUARE = TaskSpec.model_validate(dict(task_id="square", sizes={"N": 1000}, args=[
    {"name": "x", "shape": ["N"]}, {"name": "y", "shape": ["N"], "role": "output"},
    {"name": "n", "kind": "scalar", "value": "N"}]))

# --- identifiers ----------------------------------------------------------------------------

_CXX_KEYWORDS = frozenset("""alignas alignof and asm auto bool break case catch char class const
constexpr continue decltype default delete do double else enum explicit export extern false float
for friend goto if inline int long mutable namespace new noexcept not nullptr operator or private
protected public register return short signed sizeof static struct switch template this throw
true try typedef typeid typename union unsigned using virtual void volatile while dim3 size_t""".split())
#: Fragments of what the checks stop: a drawn name containing one could trip a check by itself.
_LOADED = re.compile(r"(?i)cu|std|half|bf16|fp8|ref|fall|rdtsc|clock|time|sleep|fork|thread|"
                     r"async|print|put|write|exec|spawn|clone|popen|system|chrono|try|catch|"
                     r"graph|event|stream|omp|torch|^at$|^k$|^x$|^y$|^n$|^a$|^b$|self|ext|launch")


def _usable(name: str) -> bool:
    return name not in _CXX_KEYWORDS and not keyword.iskeyword(name) and \
        not _LOADED.search(name) and not name.startswith("_")


IDENT = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{1,9}", fullmatch=True).filter(_usable)


def _split(data: st.DataObject, word: str) -> tuple[str, str]:
    """``word`` cut in two non-empty pieces at a drawn place."""
    i = data.draw(st.integers(1, len(word) - 1), label="cut")
    return word[:i], word[i:]


def _c_string(data: st.DataObject, word: str) -> str:
    """``word`` as one C string literal or adjacent pieces (``"pthr" "ead_create"``)."""
    if data.draw(st.booleans(), label="split string"):
        left, right = _split(data, word)
        return f'"{left}" "{right}"'
    return f'"{word}"'


# --- C/C++: programs, APIs, disguises -------------------------------------------------------

_KERNEL = ("__global__ void k(const float* x, float* y, int n) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i < n) y[i] = x[i] * x[i];\n}\n")


def cuda_program(top: str, body: str) -> str:
    """A square launcher (the SQUARE task) with ``top`` at file scope and ``body`` first in it."""
    return (f"#include <cuda_runtime.h>\n{top}\n{_KERNEL}"
            'extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {\n'
            f"{body}\n    k<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);\n"
            "    return (int)cudaGetLastError();\n}\n")


def kernelbench_program(top: str, body: str) -> str:
    """A KernelBench file whose extension (torch's headers: everything is declared) squares."""
    cuda = (f"#include <torch/extension.h>\n{top}\n{_KERNEL}"
            "torch::Tensor square(torch::Tensor x) {\n"
            f"{body}\n    auto y = torch::empty_like(x);\n    int n = x.numel();\n"
            "    k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);\n"
            "    return y;\n}\n")
    return ("import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
            f'\nsource = r"""\n{cuda}"""\n'
            'ext = load_inline(name="sq", cpp_sources="torch::Tensor square(torch::Tensor x);",\n'
            '                  cuda_sources=source, functions=["square"])\n\n\n'
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.square(x)\n")


@dataclass(frozen=True)
class CApi:
    """A C/C++ API a check stops, used once in a minimal program.

    Attributes:
        symbol: How the plain use spells it (``cudaStreamCreate``, ``std::thread``).
        form: ``function``, ``template`` (a function template: no pointer to it), ``type`` or
            ``object`` (``std::cout``).
        use: The statement(s) using it: ``{call}`` (functions) or ``{name}``.
        args: The call's arguments.
        check: The check meant to stop it (the property asserts a rejection; this names why).
        header: File-scope text an honest compile needs (kept by every disguise).
        proto: A prototype naming it (dropped by the disguises that re-declare it).
        c_sig: ``(return type, parameters)`` of its C symbol, for re-declarations; empty when
            the name has C++ linkage.
        kernelbench: Whether it is judged inside a KernelBench extension (torch's headers) rather
            than as a program for the SQUARE task.
    """

    symbol: str
    form: str
    use: str
    args: str = ""
    check: str = ""
    header: str = ""
    proto: str = ""
    c_sig: tuple[str, str] = ("", "")
    kernelbench: bool = False

    def program(self, top: str, body: str) -> str:
        build = kernelbench_program if self.kernelbench else cuda_program
        return build(top, body)


_CUBLAS_PARAMS = ("void*, int, int, int, int, int, const float*, const float*, int, const float*, "
                  "int, const float*, float*, int")
C_APIS: dict[str, CApi] = {
    "cublasSgemm": CApi("cublasSgemm_v2", "function", "{call};",
                        "nullptr, 0, 0, n, 1, 1, nullptr, x, n, x, 1, nullptr, y, n",
                        "no_library_delegation",
                        proto=f'extern "C" int cublasSgemm_v2({_CUBLAS_PARAMS});',
                        c_sig=("int", _CUBLAS_PARAMS)),
    "cudnnConvolutionForward": CApi(
        "cudnnConvolutionForward", "function", "{call};",
        "nullptr, nullptr, nullptr, x, nullptr, x, nullptr, 0, nullptr, 0, nullptr, nullptr, y",
        "no_library_delegation",
        proto='extern "C" int cudnnConvolutionForward(void*, const void*, const void*, '
              "const void*, const void*, const void*, const void*, int, void*, unsigned long, "
              "const void*, const void*, void*);",
        c_sig=("int", "void*, const void*, const void*, const void*, const void*, const void*, "
                      "const void*, int, void*, unsigned long, const void*, const void*, void*")),
    "cudaStreamCreate": CApi("cudaStreamCreate", "function", "cudaStream_t side;\n{call};",
                             "&side", "no_timing_tampering",
                             c_sig=("cudaError_t", "cudaStream_t*")),
    "cudaStreamBeginCapture": CApi("cudaStreamBeginCapture", "function", "{call};",
                                   "stream, cudaStreamCaptureModeGlobal", "no_timing_tampering",
                                   c_sig=("cudaError_t", "cudaStream_t, int")),
    "cudaEventRecord": CApi("cudaEventRecord", "function", "{call};", "nullptr, stream",
                            "no_timing_tampering", c_sig=("cudaError_t", "void*, cudaStream_t")),
    "cudaGraphLaunch": CApi("cudaGraphLaunch", "function", "{call};", "nullptr, stream",
                            "no_timing_tampering", c_sig=("cudaError_t", "void*, cudaStream_t")),
    "cudaSetDevice": CApi("cudaSetDevice", "function", "{call};", "1", "no_timing_tampering",
                          c_sig=("cudaError_t", "int")),
    "cudaDeviceReset": CApi("cudaDeviceReset", "function", "{call};", "", "no_timing_tampering",
                            c_sig=("cudaError_t", "void")),
    "cudaLaunchHostFunc": CApi("cudaLaunchHostFunc", "function", "{call};",
                               "stream, nullptr, nullptr", "no_timing_tampering",
                               c_sig=("cudaError_t", "cudaStream_t, void*, void*")),
    "cuStreamCreate": CApi("cuStreamCreate", "function", "{call};", "nullptr, 0",
                           "no_timing_tampering", header="#include <cuda.h>",
                           c_sig=("int", "void*, unsigned")),
    "clock_gettime": CApi("clock_gettime", "function", "{call};", "1, nullptr",
                          "no_timing_tampering", header="#include <ctime>",
                          c_sig=("int", "int, void*")),
    "clock": CApi("clock", "function", "(void){call};", "", "no_timing_tampering",
                  header="#include <ctime>", c_sig=("long", "void")),
    "usleep": CApi("usleep", "function", "{call};", "10", "no_timing_tampering",
                   kernelbench=True, c_sig=("int", "unsigned")),
    "dlsym": CApi("dlsym", "function", "(void){call};", 'nullptr, "cublasSgemm_v2"',
                  "no_timing_tampering", header="#include <dlfcn.h>",
                  c_sig=("void*", "void*, const char*")),
    "pthread_create": CApi("pthread_create", "function", "{call};", "nullptr, nullptr, nullptr, nullptr",
                           "no_threads", kernelbench=True,
                           c_sig=("int", "void*, const void*, void* (*)(void*), void*")),
    "fork": CApi("fork", "function", "(void){call};", "", "no_threads", kernelbench=True,
                 c_sig=("int", "void")),
    "system": CApi("system", "function", "(void){call};", '"true"', "no_threads",
                   header="#include <cstdlib>", c_sig=("int", "const char*")),
    "popen": CApi("popen", "function", "(void){call};", '"true", "r"', "no_threads",
                  header="#include <cstdio>", c_sig=("void*", "const char*, const char*")),
    "printf": CApi("printf", "function", "{call};", '"%f", x[0]', "no_host_output",
                   header="#include <cstdio>", c_sig=("int", "const char*, ...")),
    "__float2half": CApi("__float2half", "function", "auto h = {call};\n(void)h;", "x[0]",
                         "no_precision_downgrade", header="#include <cuda_fp16.h>"),
    "std::thread": CApi("std::thread", "type", "{name} worker([] {{}});\nworker.join();",
                        check="no_threads", kernelbench=True),
    "std::async": CApi("std::async", "template", "auto done = {call};\ndone.get();",
                       "std::launch::async, [] { return 0; }", "no_threads", kernelbench=True),
    "std::chrono::steady_clock::now": CApi(
        "std::chrono::steady_clock::now", "function", "auto t0 = {call};\n(void)t0;", "",
        "no_timing_tampering", header="#include <chrono>"),
    "std::cout": CApi("std::cout", "object", "{name} << x[0];", check="no_host_output",
                      header="#include <iostream>"),
    "torch::matmul": CApi("torch::matmul", "function", "auto z = {call};\n(void)z;", "x, x",
                          "no_library_delegation", kernelbench=True),
    "at::mm": CApi("at::mm", "function", "auto z = {call};\n(void)z;", "x, x",
                   "no_library_delegation", kernelbench=True),
    "thrust::reduce": CApi("thrust::reduce", "function", "(void){call};",
                           "thrust::device, x, x + n", "no_library_delegation",
                           header="#include <thrust/reduce.h>\n"
                                  "#include <thrust/execution_policy.h>"),
}


@dataclass
class Rewrite:
    """What a disguise puts at file scope, first in the function, and in place of the name."""

    top: str = ""
    setup: str = ""
    ref: str = ""
    call: str | None = None  # the whole call, when the disguise changes its shape
    drops_proto: bool = False


def _qualified(api: CApi) -> bool:
    return "::" in api.symbol


def _split_qualified(api: CApi) -> tuple[str, str]:
    """``std::chrono::steady_clock::now`` -> (``std``, ``chrono::steady_clock::now``)."""
    head, _, rest = api.symbol.partition("::")
    return head, rest


Disguise = Callable[[CApi, st.DataObject], Rewrite]


def _macro_object(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    return Rewrite(top=f"#define {a} {api.symbol}", ref=a)


def _macro_function(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    return Rewrite(top=f"#define {a}(...) {api.symbol}(__VA_ARGS__)", ref=a)


def _token_paste(api: CApi, data: st.DataObject) -> Rewrite:
    p = data.draw(IDENT)
    qual, _, last = api.symbol.rpartition("::")
    left, right = _split(data, last)
    left = f"{qual}::{left}" if qual else left
    return Rewrite(top=f"#define {p}(a, b) a##b", ref=f"{p}({left}, {right})")


def _line_splice(api: CApi, data: st.DataObject) -> Rewrite:
    qual, _, last = api.symbol.rpartition("::")
    left, right = _split(data, last)
    return Rewrite(ref=(f"{qual}::" if qual else "") + f"{left}\\\n{right}")


def _pointer(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    if api.form == "object":
        return Rewrite(setup=f"auto* {a} = &{api.symbol};", ref=f"(*{a})")
    return Rewrite(setup=f"auto {a} = &{api.symbol};", ref=a)


def _decay(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    return Rewrite(setup=f"auto {a} = {api.symbol};", ref=a)


def _reference(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    return Rewrite(setup=f"auto& {a} = {api.symbol};", ref=a)


def _decltype(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    return Rewrite(setup=f"decltype(&{api.symbol}) {a} = &{api.symbol};", ref=a)


def _typedef_pointer(api: CApi, data: st.DataObject) -> Rewrite:
    a, t = data.draw(IDENT), data.draw(IDENT)
    return Rewrite(top=f"typedef decltype(&{api.symbol}) {t};", setup=f"{t} {a} = {api.symbol};",
                   ref=a)


def _using_pointer(api: CApi, data: st.DataObject) -> Rewrite:
    a, t = data.draw(IDENT), data.draw(IDENT)
    return Rewrite(setup=f"using {t} = decltype(&{api.symbol});\n{t} {a} = &{api.symbol};", ref=a)


def _template_wrapper(api: CApi, data: st.DataObject) -> Rewrite:
    w = data.draw(IDENT)
    top = f"template <class F, class... Ts> auto {w}(F f, Ts... ts) {{ return f(ts...); }}"
    target = f"&{api.symbol}" if data.draw(st.booleans(), label="address") else api.symbol
    return Rewrite(top=top, call=f"{w}({', '.join(filter(None, [target, api.args]))})")


def _lambda_wrapper(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    return Rewrite(setup=f"auto {a} = [](auto... ts) {{ return {api.symbol}(ts...); }};", ref=a)


def _std_function(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    return Rewrite(top="#include <functional>",
                   setup=f"std::function<decltype({api.symbol})> {a} = {api.symbol};", ref=a)


def _type_typedef(api: CApi, data: st.DataObject) -> Rewrite:
    t = data.draw(IDENT)
    return Rewrite(top=f"typedef {api.symbol} {t};", ref=t)


def _type_using(api: CApi, data: st.DataObject) -> Rewrite:
    t = data.draw(IDENT)
    return Rewrite(top=f"using {t} = {api.symbol};", ref=t)


def _using_namespace(api: CApi, data: st.DataObject) -> Rewrite:
    ns, rest = _split_qualified(api)
    return Rewrite(top=f"using namespace {ns};", ref=rest)


def _namespace_alias(api: CApi, data: st.DataObject) -> Rewrite:
    ns, rest = _split_qualified(api)
    a = data.draw(IDENT)
    return Rewrite(top=f"namespace {a} = {ns};", ref=f"{a}::{rest}")


def _nested_using_namespace(api: CApi, data: st.DataObject) -> Rewrite:
    ns, rest = _split_qualified(api)
    a = data.draw(IDENT)
    return Rewrite(top=f"namespace {a} {{ using namespace {ns}; }}", ref=f"{a}::{rest}")


def _using_declaration(api: CApi, data: st.DataObject) -> Rewrite:
    return Rewrite(top=f"using {api.symbol};", ref=api.symbol.rpartition("::")[2])


def _argument_lookup(api: CApi, data: st.DataObject) -> Rewrite:
    # `async(std::launch::async, f)`: argument-dependent lookup finds std::async unqualified.
    return Rewrite(ref=api.symbol.rpartition("::")[2])


def _asm_label(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    ret, params = api.c_sig
    return Rewrite(top=f'extern "C" {ret} {a}({params}) asm({_c_string(data, api.symbol)});',
                   ref=a, drops_proto=True)


def _weakref(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    ret, params = api.c_sig
    label = _c_string(data, api.symbol)
    if data.draw(st.booleans(), label="c++11 attribute"):
        top = f"[[gnu::weakref({label})]] static {ret} {a}({params});"
    else:
        top = f"static {ret} {a}({params}) __attribute__((weakref({label})));"
    return Rewrite(top=top, ref=a, drops_proto=True)


def _redefine_extname(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    ret, params = api.c_sig
    pragma = f"#pragma redefine_extname {a} {api.symbol}" if data.draw(st.booleans()) else \
        f'_Pragma("redefine_extname {a} {api.symbol}")'
    return Rewrite(top=f'{pragma}\nextern "C" {ret} {a}({params});', ref=a, drops_proto=True)


def _dlsym(api: CApi, data: st.DataObject) -> Rewrite:
    a = data.draw(IDENT)
    h = data.draw(IDENT.filter(lambda name: name != a))
    ret, params = api.c_sig
    return Rewrite(top="#include <dlfcn.h>",
                   setup=f"void* {h} = dlopen(nullptr, RTLD_NOW);\n"
                         f"auto {a} = reinterpret_cast<{ret} (*)({params})>("
                         f"dlsym({h}, {_c_string(data, api.symbol)}));",
                   ref=a, drops_proto=True)


def _dlsym_by_label(api: CApi, data: st.DataObject) -> Rewrite:
    # dlsym itself reached through an asm label: no `dlsym` token anywhere.
    a = data.draw(IDENT)
    look = data.draw(IDENT.filter(lambda name: name != a))
    ret, params = api.c_sig
    return Rewrite(top=f'extern "C" void* {look}(void*, const char*) asm({_c_string(data, "dlsym")});',
                   setup=f"auto {a} = reinterpret_cast<{ret} (*)({params})>("
                         f"{look}(nullptr, {_c_string(data, api.symbol)}));",
                   ref=a, drops_proto=True)


#: Every disguise, with the API forms it applies to (``c`` = has a C symbol, ``q`` = qualified).
DISGUISES: dict[str, tuple[Disguise, set[str]]] = {
    "macro_object": (_macro_object, {"function", "template", "type", "object"}),
    "macro_function": (_macro_function, {"function", "template"}),
    "token_paste": (_token_paste, {"function", "template", "type", "object"}),
    "line_splice": (_line_splice, {"function", "template", "type", "object"}),
    "pointer": (_pointer, {"function", "object"}),
    "decay": (_decay, {"function"}),
    "reference": (_reference, {"function", "object"}),
    "decltype": (_decltype, {"function"}),
    "typedef_pointer": (_typedef_pointer, {"function"}),
    "using_pointer": (_using_pointer, {"function"}),
    "template_wrapper": (_template_wrapper, {"function"}),
    "lambda_wrapper": (_lambda_wrapper, {"function", "template"}),
    "std_function": (_std_function, {"function"}),
    "type_typedef": (_type_typedef, {"type"}),
    "type_using": (_type_using, {"type"}),
    "using_namespace": (_using_namespace, {"q"}),
    "namespace_alias": (_namespace_alias, {"q"}),
    "nested_using_namespace": (_nested_using_namespace, {"q"}),
    "using_declaration": (_using_declaration, {"q2"}),
    "argument_lookup": (_argument_lookup, {"adl"}),
    "asm_label": (_asm_label, {"c"}),
    "weakref": (_weakref, {"c"}),
    "redefine_extname": (_redefine_extname, {"c"}),
    "dlsym": (_dlsym, {"c"}),
    "dlsym_by_label": (_dlsym_by_label, {"c"}),
}


def _applies(api: CApi, forms: set[str]) -> bool:
    tags = {api.form}
    if api.c_sig[0]:
        tags.add("c")
    if _qualified(api):
        tags.add("q")
        if api.symbol.count("::") == 1:
            tags.add("q2")
    if api.symbol == "std::async":
        tags.add("adl")
    return bool(tags & forms)


def disguised_program(api: CApi, disguise: str, data: st.DataObject) -> str:
    """The API's program with its use rewritten by ``disguise``, identifiers drawn."""
    rewrite = DISGUISES[disguise][0](api, data)
    ref = rewrite.ref or api.symbol
    call = rewrite.call or f"{ref}({api.args})"
    use = api.use.format(call=call, name=ref)
    noise = data.draw(st.sampled_from(["", "int unused_pad = 2;\n(void)unused_pad;"]))
    top = "\n".join(filter(None, [api.header, "" if rewrite.drops_proto else api.proto,
                                  rewrite.top]))
    return api.program(top, "\n".join(filter(None, [noise, rewrite.setup, use])))


#: Checks whose failure says the disguise broke the program, not that it was seen through.
_BROKEN = ("preprocesses", "defines_kernel", "launcher_signature")


def _rejected(source: str) -> list[str]:
    """The hard failures of the static checks, as ``name: reason``; a program a disguise left
    unparsable or without its launcher fails the test instead (it would be rejected for
    nothing to do with the API)."""
    python = source.startswith("import")
    if python:
        ast.parse(source)
    results = run_checks(source, None if python else SQUARE)
    failed = [f"{r.name}: {r.reason}" for r in hard_failures(results)]
    broken = [f for f in failed if f.startswith(_BROKEN)]
    assert not broken, f"the disguise broke the program: {broken}\n{source}"
    return failed


C_PAIRS = [pytest.param(key, name, id=f"{key}-{name}")
           for key, api in C_APIS.items() for name, (_, forms) in DISGUISES.items()
           if _applies(api, forms)]


@pytest.mark.parametrize("key", list(C_APIS))
def test_each_plain_use_is_rejected_and_the_program_without_it_is_not(key):
    api = C_APIS[key]
    plain = api.program("\n".join(filter(None, [api.header, api.proto])),
                        api.use.format(call=f"{api.symbol}({api.args})", name=api.symbol))
    assert any(r.startswith(api.check) for r in _rejected(plain)), (key, _rejected(plain))
    without = api.program("", "")
    assert not _rejected(without), _rejected(without)


@pytest.mark.parametrize(("key", "disguise"), C_PAIRS)
@PAIR
@given(data=st.data())
def test_a_disguised_cxx_use_is_still_rejected(key, disguise, data):
    source = disguised_program(C_APIS[key], disguise, data)
    assert _rejected(source), f"not rejected:\n{source}"


#: Spellings the text checks still let through, each stopped by a run-time layer (named in its
#: reason, tested there); strict, so a text fix shows up as an XPASS to move into the tables.
KNOWN_HOLES = [
    pytest.param("cudaStream_t side = c10::cuda::getStreamFromPool().stream();\n(void)side;",
                 id="torch-pool-stream", marks=pytest.mark.xfail(strict=True, reason=(
                     "c10::cuda/at::cuda::getStreamFromPool is allowed as plumbing by the text; "
                     "a launch on that stream (named, aliased or made current) is stopped at run "
                     "time: test_streams_and_devices_run.py"))),
    pytest.param("at::cuda::set_device(1);", id="torch-set-device", marks=pytest.mark.xfail(
        strict=True, reason="at::cuda::/c10::cuda::set_device and CUDAGuard(n) are allowed as "
                            "plumbing by the text; another device than 0 fails at run time as in "
                            "the one-device GPU child: test_streams_and_devices_run.py")),
    pytest.param("auto z = x * x;\n(void)z;", id="tensor-operator", marks=pytest.mark.xfail(
        strict=True, reason="at::mul spelled as the operator `x * x` on tensors (Python: `a * b`, "
                            "`a.__mul__(b)`): telling tensors from scalars needs types; the "
                            "KernelBench dispatch watch stops it at run time (test_dispatch_watch"
                            ".py::test_a_tensor_operator_in_cpp_passes_the_text_but_not_the_run)")),
]


@pytest.mark.parametrize("body", KNOWN_HOLES)
def test_known_holes_in_the_text_checks(body):
    source = kernelbench_program("", body)
    assert _rejected(source), f"not rejected:\n{source}"


# --- Python (KernelBench forward) -----------------------------------------------------------

_PY_CUDA = ('#include <torch/extension.h>\n' + _KERNEL +
            "torch::Tensor square(torch::Tensor x) {\n    auto y = torch::empty_like(x);\n"
            "    int n = x.numel();\n"
            "    k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);\n"
            "    return y;\n}\n")


def python_program(imports: str = "", module: str = "", init: str = "", class_body: str = "",
                   params: str = "", body: str = "return ext.square(a)") -> str:
    """A KernelBench ``ModelNew`` whose forward launches the kernel; the parts are where a
    disguise may put its text (the embedded CUDA never changes, so it is preprocessed once)."""
    def indent(text: str, by: int) -> str:
        return "".join(" " * by + line + "\n" for line in text.splitlines())

    return ("import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
            f"{imports}\n\nsource = r\"\"\"\n{_PY_CUDA}\"\"\"\n"
            'ext = load_inline(name="sq", cpp_sources="torch::Tensor square(torch::Tensor x);",\n'
            '                  cuda_sources=source, functions=["square"])\n'
            f"{module}\n\nclass ModelNew(nn.Module):\n{indent(class_body, 4)}"
            "    def __init__(self):\n        super().__init__()\n"
            f"{indent(init, 8)}\n    def forward(self, a, b{params}):\n{indent(body, 8)}")


@dataclass(frozen=True)
class PyApi:
    """A Python API a check stops: a dotted module name, or a tensor method (``.matmul``).

    Attributes:
        dotted: ``torch.matmul``; for a method, ``Tensor.<name>``.
        use: forward's body using it: ``{ref}`` is the name (a callable or a value).
        check: The check meant to stop it.
        value: Whether it is a value (a dtype), not something called.
    """

    dotted: str
    use: str
    check: str
    value: bool = False

    @property
    def method(self) -> str | None:
        return self.dotted.removeprefix("Tensor.") if self.dotted.startswith("Tensor.") else None


PY_APIS: dict[str, PyApi] = {
    "torch.matmul": PyApi("torch.matmul", "return ext.square({ref}(a, b))", "no_library_delegation"),
    "torch.nn.functional.linear": PyApi("torch.nn.functional.linear",
                                        "return ext.square({ref}(a, b))", "no_library_delegation"),
    "torch.softmax": PyApi("torch.softmax", "return ext.square({ref}(a, 1))",
                           "no_library_delegation"),
    "Tensor.matmul": PyApi("Tensor.matmul", "return ext.square({ref})", "no_library_delegation"),
    "torch.cuda.Event": PyApi("torch.cuda.Event", "start = {ref}(enable_timing=True)\n"
                              "return ext.square(a)", "no_timing_tampering"),
    "torch.cuda.Stream": PyApi("torch.cuda.Stream", "side = {ref}()\nreturn ext.square(a)",
                               "no_timing_tampering"),
    "time.perf_counter": PyApi("time.perf_counter", "t0 = {ref}()\nreturn ext.square(a)",
                               "no_timing_tampering"),
    "threading.Thread": PyApi("threading.Thread", "{ref}(target=ext.square, args=(a,)).start()\n"
                              "return ext.square(a)", "no_threads"),
    "torch.float16": PyApi("torch.float16", "return ext.square(a.to({ref}))",
                           "no_precision_downgrade", value=True),
    "builtins.print": PyApi("builtins.print", "{ref}(a)\nreturn ext.square(a)", "no_host_output"),
}


@dataclass
class PyRewrite:
    """Where a Python disguise puts its text, and what replaces the API at the use."""

    ref: str
    imports: str = ""
    module: str = ""
    init: str = ""
    class_body: str = ""
    params: str = ""
    setup: str = ""


def _parts(api: PyApi) -> tuple[str, str]:
    """``torch.nn.functional.linear`` -> (``torch.nn.functional``, ``linear``); a builtin's
    parent is ``builtins``."""
    parent, _, last = api.dotted.rpartition(".")
    return parent, last


def _plain(api: PyApi) -> str:
    """How an honest program names it (``print`` for ``builtins.print``)."""
    return api.dotted.removeprefix("builtins.")


def _py_import_as(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    root, _, rest = api.dotted.partition(".")
    return PyRewrite(imports=f"import {root} as {a}", ref=f"{a}.{rest}")


def _py_from_import_as(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    parent, last = _parts(api)
    return PyRewrite(imports=f"from {parent} import {last} as {a}", ref=a)


def _py_module_alias(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    parent, last = _parts(api)
    return PyRewrite(imports=f"import {parent.split('.')[0]}", module=f"{a} = {parent}",
                     ref=f"{a}.{last}")


def _py_name_alias(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    return PyRewrite(imports=f"import {api.dotted.split('.')[0]}", module=f"{a} = {_plain(api)}",
                     ref=a)


def _py_getattr(api: PyApi, data: st.DataObject) -> PyRewrite:
    parent, last = _parts(api)
    left, right = _split(data, last) if len(last) > 1 else (last, "")
    return PyRewrite(imports=f"import {parent.split('.')[0]}",
                     ref=f'getattr({parent}, "{left}" + "{right}")')


def _py_getattr_alias(api: PyApi, data: st.DataObject) -> PyRewrite:
    g = data.draw(IDENT)
    parent, last = _parts(api)
    return PyRewrite(imports=f"import {parent.split('.')[0]}", module=f"{g} = getattr",
                     ref=f'{g}({parent}, "{last}")')


def _py_import_module(api: PyApi, data: st.DataObject) -> PyRewrite:
    parent, last = _parts(api)
    left, right = _split(data, parent) if len(parent) > 1 else (parent, "")
    return PyRewrite(imports="import importlib",
                     ref=f'importlib.import_module("{left}" + "{right}").{last}')


def _py_dunder_import(api: PyApi, data: st.DataObject) -> PyRewrite:
    root, _, rest = api.dotted.partition(".")
    return PyRewrite(ref=f'__import__("{root}").{rest}')


def _py_sys_modules(api: PyApi, data: st.DataObject) -> PyRewrite:
    parent, last = _parts(api)
    return PyRewrite(imports=f"import sys\nimport {parent.split('.')[0]}",
                     ref=f'sys.modules["{parent}"].{last}')


def _py_vars(api: PyApi, data: st.DataObject) -> PyRewrite:
    parent, last = _parts(api)
    return PyRewrite(imports=f"import {parent.split('.')[0]}", ref=f'vars({parent})["{last}"]')


def _py_dict(api: PyApi, data: st.DataObject) -> PyRewrite:
    parent, last = _parts(api)
    return PyRewrite(imports=f"import {parent.split('.')[0]}", ref=f'{parent}.__dict__["{last}"]')


def _py_attrgetter(api: PyApi, data: st.DataObject) -> PyRewrite:
    root, _, rest = api.dotted.partition(".")
    return PyRewrite(imports=f"import operator\nimport {root}",
                     ref=f'operator.attrgetter("{rest}")({root})')


def _py_self_attr(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    return PyRewrite(imports=f"import {api.dotted.split('.')[0]}", init=f"self.{a} = {_plain(api)}",
                     ref=f"self.{a}")


def _py_class_attr(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    held = _plain(api) if api.value else f"staticmethod({_plain(api)})"
    return PyRewrite(imports=f"import {api.dotted.split('.')[0]}", class_body=f"{a} = {held}",
                     ref=f"self.{a}")


def _py_default_arg(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    return PyRewrite(imports=f"import {api.dotted.split('.')[0]}", params=f", {a}={_plain(api)}",
                     ref=a)


def _py_lambda(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    return PyRewrite(imports=f"import {api.dotted.split('.')[0]}",
                     module=f"{a} = lambda *p, **q: {_plain(api)}(*p, **q)", ref=a)


def _py_partial(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    return PyRewrite(imports=f"import functools\nimport {api.dotted.split('.')[0]}",
                     module=f"{a} = functools.partial({_plain(api)})", ref=a)


def _py_holder(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    return PyRewrite(imports=f"import {api.dotted.split('.')[0]}", module=f"{a} = ({_plain(api)},)",
                     ref=f"{a}[0]")


def _py_walrus(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    return PyRewrite(imports=f"import {api.dotted.split('.')[0]}", ref=f"({a} := {_plain(api)})")


def _py_star_import(api: PyApi, data: st.DataObject) -> PyRewrite:
    parent, last = _parts(api)
    return PyRewrite(imports=f"from {parent} import *", ref=last)


def _py_helper(api: PyApi, data: st.DataObject) -> PyRewrite:
    h, a = data.draw(IDENT), data.draw(IDENT)
    via_self = data.draw(st.booleans(), label="bound on self")
    return PyRewrite(imports=f"import {api.dotted.split('.')[0]}",
                     module=f"def {h}(*p, **q):\n    return {_plain(api)}(*p, **q)",
                     init=f"self.{a} = {h}" if via_self else "",
                     ref=f"self.{a}" if via_self else h)


def _py_pickled(api: PyApi, data: st.DataObject) -> PyRewrite:
    # A global rebuilt from its name by the unpickler: no attribute access anywhere.
    parent, last = _parts(api)
    return PyRewrite(imports="import pickle", ref=f'pickle.loads(b"c{parent}\\n{last}\\n.")')


# Tensor-method disguises (the receiver is forward's `a`).
def _m_getattr(api: PyApi, data: st.DataObject) -> PyRewrite:
    left, right = _split(data, api.method)
    return PyRewrite(ref=f'getattr(a, "{left}" + "{right}")(b)')


def _m_methodcaller(api: PyApi, data: st.DataObject) -> PyRewrite:
    return PyRewrite(imports="import operator", ref=f'operator.methodcaller("{api.method}", b)(a)')


def _m_unbound(api: PyApi, data: st.DataObject) -> PyRewrite:
    owner = data.draw(st.sampled_from(["torch.Tensor", "type(a)", "a.__class__"]))
    return PyRewrite(ref=f"{owner}.{api.method}(a, b)")


def _m_dunder(api: PyApi, data: st.DataObject) -> PyRewrite:
    return PyRewrite(ref=data.draw(st.sampled_from(["a.__matmul__(b)", "b.__rmatmul__(a)"])))


def _m_operator(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    if data.draw(st.booleans(), label="from import"):
        return PyRewrite(imports=f"from operator import matmul as {a}", ref=f"{a}(a, b)")
    return PyRewrite(imports="import operator", ref="operator.matmul(a, b)")


def _m_held(api: PyApi, data: st.DataObject) -> PyRewrite:
    a = data.draw(IDENT)
    return PyRewrite(init=f"self.{a} = torch.Tensor.{api.method}", ref=f"self.{a}(a, b)")


def _m_parameter(api: PyApi, data: st.DataObject) -> PyRewrite:
    w = data.draw(IDENT)
    return PyRewrite(init=f"self.{w} = nn.Parameter(torch.ones(4, 4))",
                     ref=f"self.{w}.{api.method}(a)")


PY_DISGUISES: dict[str, Callable[[PyApi, st.DataObject], PyRewrite]] = {
    "import_as": _py_import_as, "from_import_as": _py_from_import_as,
    "module_alias": _py_module_alias, "name_alias": _py_name_alias, "getattr": _py_getattr,
    "getattr_alias": _py_getattr_alias, "import_module": _py_import_module,
    "dunder_import": _py_dunder_import, "sys_modules": _py_sys_modules, "vars": _py_vars,
    "dict": _py_dict, "attrgetter": _py_attrgetter, "self_attr": _py_self_attr,
    "class_attr": _py_class_attr, "default_arg": _py_default_arg, "lambda": _py_lambda,
    "partial": _py_partial, "holder": _py_holder, "walrus": _py_walrus,
    "star_import": _py_star_import, "helper": _py_helper, "pickled": _py_pickled,
}
METHOD_DISGUISES: dict[str, Callable[[PyApi, st.DataObject], PyRewrite]] = {
    "getattr": _m_getattr, "methodcaller": _m_methodcaller, "unbound": _m_unbound,
    "dunder": _m_dunder, "operator": _m_operator, "held": _m_held, "parameter": _m_parameter,
}
_CALLABLE_ONLY = {"lambda", "partial", "helper"}


def _py_pairs() -> list:
    pairs = []
    for key, api in PY_APIS.items():
        table = METHOD_DISGUISES if api.method else PY_DISGUISES
        for name in table:
            if api.value and name in _CALLABLE_ONLY:
                continue
            if name == "dunder" and api.method != "matmul":
                continue
            pairs.append(pytest.param(key, name, id=f"{key}-{name}"))
    return pairs


def disguised_python(api: PyApi, disguise: str, data: st.DataObject) -> str:
    table = METHOD_DISGUISES if api.method else PY_DISGUISES
    rw = table[disguise](api, data)
    return python_program(imports=rw.imports, module=rw.module, init=rw.init,
                          class_body=rw.class_body, params=rw.params,
                          body=api.use.format(ref=rw.ref))


@pytest.mark.parametrize("key", list(PY_APIS))
def test_each_plain_python_use_is_rejected(key):
    api = PY_APIS[key]
    ref = "a.matmul(b)" if api.method else _plain(api)
    plain = python_program(imports=f"import {api.dotted.split('.')[0]}" if not api.method else "",
                           body=api.use.format(ref=ref))
    assert any(r.startswith(api.check) for r in _rejected(plain)), (key, _rejected(plain))
    assert not _rejected(python_program())


@pytest.mark.parametrize(("key", "disguise"), _py_pairs())
@PAIR
@given(data=st.data())
def test_a_disguised_python_use_is_still_rejected(key, disguise, data):
    source = disguised_python(PY_APIS[key], disguise, data)
    assert _rejected(source), f"not rejected:\n{source}"


# --- the link check: what only the compiled object shows ------------------------------------

#: APIs the link check refuses by symbol (``link_check.DENIED``), and the disguises that keep
#: their name out of the text entirely (a split string); the text checks are not consulted.
LINKED = ["pthread_create", "fork", "dlsym", "cudaStreamCreate", "cudaEventRecord",
          "clock_gettime", "clock"]
LINK_DISGUISES = ["asm_label", "weakref", "redefine_extname", "dlsym_by_label"]


@pytest.fixture(scope="module")
def emu_cache(tmp_path_factory):
    return session_cache(tmp_path_factory)


def _link_refusal(source: str, cache: Path) -> str | None:
    from structcover.tools.verify.emulator import LinkRefused, build_library
    from structcover.tools.verify.rewriter import rewrite

    try:
        build_library(rewrite(source).source, cache)
    except LinkRefused as exc:
        return str(exc)
    return None


@needs_cxx
@pytest.mark.slow
@settings(max_examples=8, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_compiled_disguise_is_refused_by_the_link_check(emu_cache, data):
    key = data.draw(st.sampled_from(LINKED), label="api")
    disguise = data.draw(st.sampled_from(
        [d for d in LINK_DISGUISES if not (key == "dlsym" and d == "dlsym_by_label")]))
    api = C_APIS[key]
    api = CApi(api.symbol, api.form, "if (n < 0) {{\n" + api.use + "\n}}", api.args, api.check,
               c_sig=api.c_sig)  # a SQUARE program; the call is kept (n is not known)
    why = _link_refusal(disguised_program(api, disguise, data), emu_cache)
    # Behind dlsym (found by its label) the program links dlsym, not the API: refused for that.
    linked = "dlsym" if disguise == "dlsym_by_label" else api.symbol
    assert why is not None and f"`{linked}`" in why, why


@needs_cxx
@pytest.mark.slow
@pytest.mark.parametrize("source", [
    cuda_program("#include <thread>\nusing namespace std;",
                 "if (n < 0) { thread worker([] {}); worker.join(); }"),
    *[(Path(__file__).parents[2] / "data" / "adversarial" / "cheating" / name).read_text()
      for name in ("emu_host_thread_open_launch.cu", "emu_device_spawned_thread.cu")],
], ids=["std-thread-using-namespace", "host-thread-open-launch", "device-spawned-thread"])
def test_threads_the_text_checks_also_refuse_are_refused_by_the_link_check(source, emu_cache):
    why = _link_refusal(source, emu_cache)
    assert why is not None and ("pthread_create" in why or "std::thread" in why), why


# --- the negative property: spelling alone does not reject ----------------------------------

#: Pieces of stopped APIs an honest program may well use in its own names.
_PIECES = ["gemm", "Sgemm", "blas", "dnn", "stream", "Stream", "event", "Event", "graph", "Graph",
           "thread", "Thread", "async", "clock", "time", "sleep", "fork", "spawn", "print",
           "half", "Half", "matmul", "softmax", "mm", "device", "Device", "handle", "Handle",
           "chrono", "system", "popen", "cout", "reduce", "capture", "Host"]
#: Host locals and fields named exactly like the APIs' words.
_WORDS = ["stream2", "thread", "handle", "blockIdx2", "event", "graph", "clock", "time", "half",
          "fork", "system", "sleep", "write", "async", "matmul", "mm", "sum", "cout", "popen",
          "chrono", "device", "clone", "puts"]
PIECE_NAME = st.builds(lambda pre, piece, post: pre + piece + post,
                       st.from_regex(r"[a-z]{1,4}", fullmatch=True), st.sampled_from(_PIECES),
                       st.from_regex(r"(?:_[a-z0-9]{1,4})?", fullmatch=True))


def honest_cuda(data: st.DataObject) -> str:
    """A correct SQUARE program whose names are drawn from the APIs' vocabulary."""
    kern, dev, struct = (data.draw(PIECE_NAME.filter(lambda s, d=d: s != d), label=label)
                         for d, label in (("", "kernel"), ("", "device fn"), ("", "struct")))
    v1, v2, f1, f2 = data.draw(st.lists(st.sampled_from(_WORDS), min_size=4, max_size=4,
                                        unique=True), label="words")
    names = {kern, dev, struct}
    if len(names) < 3:
        kern, dev, struct = "kx", "dx", "Sx"
    using = data.draw(st.booleans(), label="using namespace std")
    block = data.draw(st.sampled_from(["blockDim", "threads", "block"]), label="block var")
    top = "#include <algorithm>\nusing namespace std;\n" if using else ""
    return (f"#include <cuda_runtime.h>\n#include <cstdio>\n{top}"
            f"struct {struct} {{ int {f1}; int {f2}; }};\n"
            f"__device__ float {dev}(float v) {{ return v * v; }}\n"
            f"__global__ void {kern}(const float* x, float* y, int n) {{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    if (i < n) y[i] = {dev}(x[i]);\n}}\n"
            'extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {\n'
            f"    int {v1} = n / 2;\n    {struct} cfg{{1, 2}};\n"
            f"    for (int {v2} = 0; {v2} < 2; ++{v2}) {{ {v1} += {v2} + cfg.{f1} * cfg.{f2}; }}\n"
            f"    (void){v1};\n    dim3 {block}(256);\n"
            f"    {kern}<<<(n + 255) / 256, {block}, 0, stream>>>(x, y, n);\n"
            '    cudaError_t err = cudaGetLastError();\n'
            '    if (err != cudaSuccess) fprintf(stderr, "launch: %s\\n", cudaGetErrorString(err));\n'
            "    return (int)err;\n}\n")


def honest_python(data: st.DataObject) -> str:
    """A correct KernelBench ``ModelNew`` whose names are drawn from the APIs' vocabulary."""
    words = ["matmul", "linear", "softmax", "mm", "stream", "event", "thread", "half", "time",
             "relu", "sum", "device", "handle", "graph"]
    attr, meth, helper, local = data.draw(st.lists(st.sampled_from(words), min_size=4,
                                                   max_size=4, unique=True), label="names")
    return python_program(module=f"def {helper}(x):\n    return ext.square(x)",
                          init=f"self.{attr} = ext",
                          class_body=f"def {meth}(self, x):\n    return self.{attr}.square(x)",
                          body=f"{local} = a.shape[0] // 2\n"
                               f"return {helper}(self.{meth}(a)) if {local} >= 0 else a")


@settings(max_examples=25, derandomize=True, deadline=None, database=None)
@given(data=st.data())
def test_honest_programs_named_like_the_apis_are_not_rejected(data):
    source = honest_cuda(data)
    assert not _rejected(source), f"{_rejected(source)}\n{source}"


@settings(max_examples=15, derandomize=True, deadline=None, database=None)
@given(data=st.data())
def test_honest_kernelbench_files_named_like_the_apis_are_not_rejected(data):
    source = honest_python(data)
    assert not _rejected(source), f"{_rejected(source)}\n{source}"
