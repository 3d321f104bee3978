"""Stopped C/C++ names however referred to: references resolved by C++'s lookup (a member, a
variable in scope or another namespace's name is not the library's), symbol renaming, namespace
aliases; and the checks that use them."""

from __future__ import annotations

import pytest

from structcover.tools.verify.hacking import (
    check_no_host_output,
    check_no_library_delegation,
    check_no_threads,
    check_no_timing_tampering,
)
from structcover.tools.verify.hacking_names import (
    references,
    renamed_symbol,
    resolve_namespace_aliases,
)

C_NAMES = frozenset({"clock", "usleep", "fork", "pthread_create", "printf"})
STD = frozenset({"thread", "async", "cout"})


@pytest.mark.parametrize("code", [
    "int f(int n) { auto g = &clock; return 0; }",
    "int f(int n) { { int clock = 1; (void)clock; } auto g = &clock; return 0; }",  # out of scope
    "int f() { return std::clock() + ::clock(); }",
    'extern "C" int usleep(unsigned); int f() { return 0; }',  # a re-declaration names it
    "int f() { return W(usleep, 3); }",
    "int f() { auto x = async(std::launch::async, g); return 0; }",  # argument-dependent lookup
    "int f() { std :: thread t(g); return 0; }",
    "__host__ __device__ void h() { auto f = &usleep; f(1); }",  # host code too
])
def test_a_library_name_used_as_a_value_or_call_is_found(code):
    assert references(code, C_NAMES, std_names=STD) is not None, code


@pytest.mark.parametrize("code", [
    "int f(int n) { int clock = 0; return clock; }",
    "int f(int clock) { return clock; }",
    "struct S { int clock; int get() { return clock; } };",
    "int f(S s) { return s.clock + s->fork; }",
    "int f() { return at::fork(); }",
    "int f() { for (auto clock : v) { g(clock); } return 0; }",
    "int f() { auto l = [](int fork) { return fork; }; return 0; }",
    "int async(int); int f() { return async(3); } int async(int x) { return x; }",
    "__global__ void k(long* t) { *t = clock(); }",  # device code: the SM's clock
    "int f() { thread t(g); return 0; }",  # no `using namespace std`: not std's thread
    "int f() { int thread = 3; return thread * 2; }",
])
def test_members_locals_own_functions_and_other_namespaces_are_not_the_library(code):
    assert references(code, C_NAMES, std_names=STD) is None, code


def test_using_namespace_std_brings_std_names_in_unless_shadowed():
    assert references("void f() { thread t(g); }", C_NAMES, std_names=STD, std_unqualified=True)
    assert references("void f() { S::thread t(g); }", C_NAMES, std_names=STD,
                      std_unqualified=True)
    assert references("int f() { int cout = 1; return cout; }", C_NAMES, std_names=STD,
                      std_unqualified=True) is None


def test_calls_can_be_left_to_another_rule():
    assert references('int f() { printf(""); return 0; }', C_NAMES, calls=False) is None
    assert references('int f() { (printf)("%d", 1); return 0; }', C_NAMES, calls=False)


@pytest.mark.parametrize("code", [
    'extern "C" int f(int) asm("pthread_" "create");',
    'extern "C" int f(int) __asm__("");',
    'static int f(int) __attribute__((weakref("")));',
    '[[gnu::weakref("")]] static int f(int);',
    "#pragma redefine_extname f pthread_create\nextern \"C\" int f(int);",
    "#pragma weak f = g",
])
def test_symbol_renaming_is_found(code):
    assert renamed_symbol(code), code


def test_inline_ptx_in_a_kernel_is_not_a_label():
    assert renamed_symbol('__global__ void k(int c) { if (c) asm(""); asm volatile(""); }') is None


def test_namespace_aliases_and_pulling_namespaces_are_spelled_out():
    text = "namespace S = std; namespace C = S::chrono; namespace A { using namespace at; }\n" \
           "S::thread t; C::steady_clock c; A::mm(x, y);"
    out = resolve_namespace_aliases(text, ("std", "at"))
    assert "std::thread" in out and "std::chrono::steady_clock" in out and "at::mm(" in out
    assert resolve_namespace_aliases("namespace L = mylib; L::go();", ("std",)) == \
        "namespace L = mylib; L::go();"


LAUNCH = ('__global__ void k(float* y) {{ y[threadIdx.x] = 1.0f; }}\n{top}\n'
          'extern "C" int launch(float* y, int n, cudaStream_t stream) {{\n{body}\n'
          "k<<<1, 32, 0, stream>>>(y); return 0; }}\n")


@pytest.mark.parametrize(("check", "top", "body"), [
    (check_no_threads, "using namespace std;", "thread t([] {}); t.join();"),
    (check_no_threads, "namespace S = std;", "S::thread t([] {}); t.join();"),
    (check_no_threads, "", "auto f = &popen; f(\"ls\", \"r\");"),
    (check_no_timing_tampering, "using namespace std;", "auto t0 = chrono::steady_clock::now();"),
    (check_no_timing_tampering, "", "auto t = __builtin_ia32_rdtsc(); (void)t;"),
    (check_no_timing_tampering, "", "auto f = &clock; (void)f();"),
    (check_no_timing_tampering, "#include <cuda.h>", "auto f = &cuStreamCreate; (void)f;"),
    (check_no_timing_tampering, "", 'void* fn; cudaGetDriverEntryPoint("cuEventRecord", &fn, 0);'),
    (check_no_host_output, "", 'auto p = &printf; p("%f", y[0]);'),
    (check_no_host_output, "", 'std::printf("%f", y[0]);'),
    (check_no_host_output, "using namespace std;", "cout << y[0];"),
    (check_no_library_delegation, 'extern "C" int cublasSgemm_v2(void*);',
     "auto g = &cublasSgemm_v2; g(nullptr);"),
    (check_no_library_delegation, 'extern "C" int f(void*) asm("cub" "lasSgemm_v2");',
     "f(nullptr);"),
    (check_no_library_delegation, 'extern "C" int f(void*) asm("cudaStream" "Create");',
     "f(nullptr);"),
])
def test_each_check_sees_the_name_however_reached(check, top, body):
    ok, why = check(LAUNCH.format(top=top, body=body))
    assert not ok, body
    honest_ok, honest_why = check(LAUNCH.format(top="", body=""))
    assert honest_ok, honest_why
