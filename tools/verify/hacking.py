"""Anti-hacking checks: static tests for known reward hacks, one small function each.

Each ``check_*(program) -> (ok, reason)`` looks for one way a program can pass verification or
look fast without doing the work. ``ok`` is True when nothing was found; ``reason`` says what
was found (or that nothing was). Severity is stated per check in :data:`CHECKS`: a ``hard``
failure rejects the program (``verify`` runs these checks first and fills
``Verdict.hacking_flags``); a ``warning`` is recorded for a human or the archive to weigh.

CUDA/C++ programs are checked on their *preprocessed* text (``preprocess.py``): macros
expanded, ``#if 0`` and comments dropped, host and device passes both read, string literal
contents blanked (so ``"cublasSgemm"`` in a message is not a call, while the library check
still reads strings for asm labels and alias names). A renaming by macro, ``typedef`` or
``using`` therefore does not hide a call or a type; the other renamings -- a namespace alias,
``using namespace``, a function pointer or reference, an ``asm`` label, ``weakref`` or
renaming pragma -- are resolved by ``hacking_names.py`` (issue 27: every stopped API is tested
under each disguise in ``tests/tools/verify/test_renaming_properties.py``). Python (KernelBench) files are checked
through their syntax tree (``hacking_py.py``), and the CUDA text they embed through these
checks. Run-time checks back these (``equivalence``: inputs unchanged after the call, outputs
compared on varying sizes; the CPU emulator: canary zones around every buffer).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

from structcover.schema import TaskSpec, TensorArg
from structcover.tools.kernelbench.cpu_scan import unused_library_header
from structcover.tools.verify.hacking_names import (
    PRINT_FUNCTIONS,
    SPAWN_FUNCTIONS,
    STD_OUTPUT,
    STD_THREADS,
    TIMER_FUNCTIONS,
    references,
    renamed_symbol,
    uses_namespace,
)
from structcover.tools.verify.hacking_precision import check_no_precision_downgrade
from structcover.tools.verify.hacking_state import (
    check_device_globals,
    check_no_cached_outputs,
    check_no_hardcoded_tables,
)
from structcover.tools.verify.hacking_subject import (
    Subject,
    as_subject,
    check_launcher_signature,
    first_match,
    launcher_params,
    line_of,
    subject,
)
from structcover.tools.verify.hacking_torch import torch_compute
from structcover.tools.verify.preprocess import strip_comments

__all__ = ["CHECKS", "CheckResult", "Subject", "hard_failures", "run_checks", "strip_comments"]

Severity = Literal["hard", "warning"]


class CheckResult(BaseModel):
    """The verdict of one check on one program."""

    name: str
    ok: bool
    severity: Severity
    reason: str


# --- the checks ------------------------------------------------------------------------------

# Rationale: a program the preprocessor cannot finish (a macro bomb, gigabytes of expansion)
# cannot be checked, and would cost the compiler the same. Hard.
def check_preprocesses(program: str | Subject) -> tuple[bool, str]:
    """The preprocessor finishes within its time, memory and output limits."""
    subj = as_subject(program)
    if subj.pp.error:
        return False, f"cannot be checked: {subj.pp.error}"
    return True, "preprocessed"


# Rationale: most released RL "CUDA" solutions define no kernel at all and only rearrange
# framework calls; a program that is meant to be a custom kernel must define one. Hard.
def check_defines_kernel(program: str | Subject) -> tuple[bool, str]:
    """A ``__global__`` function with a body must exist (after preprocessing)."""
    subj = as_subject(program)
    for text in subj.passes:
        if re.search(r"__global__[^;{}]*\([^;{}]*\)\s*(?:const\s*)?\{", text):
            return True, "defines at least one __global__ kernel"
    return False, "no __global__ kernel is defined: the program does no custom GPU work"


_LIBRARIES = (r"torch|ATen|c10|cublas\w*|cudnn\w*|cufft\w*|cusparse\w*|cusolver\w*|curand\w*|"
              r"cutlass|cute|thrust|cub|npp\w*|nvblas|magma\w*|oneapi|mkl\w*|cblas|Eigen|"
              r"openblas\w*|lapack\w*")
#: Harness headers a KernelBench extension needs (tensor plumbing, not compute).
_EXTENSION_HEADERS = re.compile(r"^(?:torch/extension\.h|torch/types\.h|ATen/cuda/CUDAContext\.h|"
                                r"c10/cuda/CUDAStream\.h|c10/cuda/CUDAGuard\.h|cuda_runtime\.h|"
                                r"cuda\.h|cuda_fp16\.h|cuda_bf16\.h)$")
_LIB_SYMBOL = re.compile(r"\b(?:cublas|cublasLt|cudnn|cufft|cusparse|cusolver|curand|nvblas|"
                         r"cblas_|sgemm_|dgemm_)\w*")


# Rationale: calling torch/ATen ops, cuBLAS, cuDNN, CUTLASS or device-wide CUB/Thrust
# algorithms hands the work to the reference library while claiming a custom kernel. Hard.
def check_no_library_delegation(program: str | Subject) -> tuple[bool, str]:
    """No torch/ATen compute ops, BLAS/DNN/FFT/sparse libraries, CUTLASS, CUB/Thrust device-wide."""
    subj = as_subject(program)
    code = "\n".join(subj.passes)  # preprocessed: a macro that spells a library name shows it
    for target in subj.pp.includes:
        if subj.embedded and _EXTENSION_HEADERS.match(target):
            continue
        if unused_library_header(target, code):
            continue  # declares a library the program never names: boilerplate, no delegation
        if re.match(rf"^(?:{_LIBRARIES})(?:[/_.]|$)", target.split("/")[0]) or \
                re.search(r"(?:^|/)(?:cub/device|thrust/)", target):
            return False, f"includes a reference library: `{target}`"
    found = first_match([
        # Named at all, not only called: `auto f = &cublasSgemm_v2;` reaches the same code.
        (r"\b(?:cublas|cublasLt|cudnn|cufft|cusparse|cusolver|curand)[A-Z_]\w*",
         "names a CUDA library function or type"),
        (r"\bcblas_\w+|\b[sd]gemm_(?!\w)", "names a BLAS library function"),
        (r"\bcutlass::|\bcute::", "uses CUTLASS/CuTe"),
        (r"\bcub::Device\w+", "calls a device-wide CUB algorithm"),
        (r"\bthrust::(?!device_ptr|raw_pointer_cast)\w+\s*\(", "calls a Thrust algorithm"),
    ], subj)
    # Torch plumbing (options, allocations, streams) is allowed; its compute is not.
    found = found or next(filter(None, map(torch_compute, subj.passes)), None)
    if found:
        return False, found
    # A string that is exactly a library symbol is an asm label or an alias attribute binding
    # a local name to it (a message that merely mentions one is not).
    for lit in subj.pp.strings:
        if m := _LIB_SYMBOL.fullmatch(lit.strip('R"() ').strip()):
            return False, (f"names a library symbol in a string (asm label or alias?): "
                           f"`{m.group(0)}`")
    # Split into pieces (`asm("cub" "lasSgemm_v2")`) no string is the symbol, so any such
    # binding is refused, whatever it names (a thread or timer function too: the name the
    # program calls is not the one it links).
    if found := renamed_symbol(subj.pp.host):
        return False, found
    return True, "no reference-library calls"


# Rationale: a try/except (or a call to the reference) lets a failing kernel fall back to
# the reference implementation and still pass equivalence. Hard.
def check_no_fallback(program: str | Subject) -> tuple[bool, str]:
    """No try/catch blocks, no calls to a reference or fallback implementation."""
    found = first_match([
        (r"\btry\s*\{", "C++ try block"),
        (r"\bcatch\s*\(", "C++ catch block"),
        (r"\b(?:\w*[Rr]eference\w*|ref_\w+|\w*[Ff]allback\w*)\s*\(", "calls a reference/fallback"),
        (r"\b(?:setjmp|longjmp|sigsetjmp|siglongjmp)\s*\(", "jumps out of a failing path"),
    ], as_subject(program))
    return (False, found) if found else (True, "no fallback paths")


# Rationale: timing is done by the harness with CUDA events on the stream it passes; a program
# that creates events or streams, touches timers, resets the device, captures graphs or
# launches on another stream can hide work from the timer or tamper with it. Hard.
def check_no_timing_tampering(program: str | Subject) -> tuple[bool, str]:
    """No events, own streams, graphs, device resets, host timers, symbol interposition."""
    subj = as_subject(program)
    found = first_match([
        (r"\bcudaEvent\w*", "uses CUDA events"),
        (r"\bcudaStream(?:Create|Destroy|WaitEvent|BeginCapture|EndCapture|AddCallback)\w*",
         "manages its own streams"),
        (r"\bcudaStream(?:PerThread|Legacy)\b|\bcudaStreamNonBlocking\b",
         "uses a global stream handle"),
        (r"\bcu(?:da)?Graph\w*", "uses CUDA graphs"),
        (r"\bcu(?:Stream|Event|Ctx)[A-Z]\w*|\bcuDevicePrimaryCtx\w*|\bcuLaunchHostFunc\b|"
         r"\bcuProfiler\w*", "uses the driver API for streams, events or contexts"),
        (r"\bcudaGetDriverEntryPoint\w*|\bcuGetProcAddress\w*",
         "looks a driver function up by name"),
        # cudaSetDevice(x.device().index()) selects the device the inputs are on (a public
        # solution's launcher does it); any other device is refused here, and the KernelBench
        # GPU child sees one device only (tools/kernelbench/sandbox.py) whatever is asked for.
        (r"\bcudaSetDevice\b(?!\s*\(\s*[\w.]+\s*(?:\.|->)\s*(?:device\s*\(\s*\)\s*\.\s*index|"
         r"get_device)\s*\(\s*\)\s*\))", "changes device state"),
        (r"\bcuda(?:DeviceReset|DeviceSetLimit|ProfilerStart|ProfilerStop|"
         r"LaunchHostFunc|SetDeviceFlags)\b", "changes device or profiler state"),
        # `chrono::` under any qualifier: `using namespace std;` or an alias reaches it too.
        (r"\b(?:std\s*::\s*chrono\b|chrono\s*::|(?:steady|high_resolution|system)_clock\b|"
         r"clock_gettime|gettimeofday|QueryPerformanceCounter|\w*rdtsc\w*|"
         r"__builtin_readcyclecounter\b|clock\s*\(\s*\)|time\s*\(\s*(?:NULL|nullptr|0)\s*\))",
         "reads a host timer"),
        (r"\b(?:dlsym|dlopen|dlvsym|LD_PRELOAD)\b", "interposes symbols"),
        (r"\b(?:sleep|usleep|nanosleep)\s*\(|\bthis_thread\s*::\s*sleep_\w+",
         "sleeps on the host"),
    ], subj)
    if found:
        return False, found
    if found := references(subj.pp.host, TIMER_FUNCTIONS):
        return False, f"reads a host timer or sleeps (called or taken as a value): {found}"
    stream = next((name for ctype, name in launcher_params(subj) if "cudaStream_t" in ctype),
                  None)
    if stream is not None:
        for site in _launch_configs(subj.pp.host):
            if len(site) >= 4 and site[3].strip() != stream:
                return False, (f"launch on stream `{site[3].strip()[:40]}` instead of the "
                               f"given `{stream}`")
    return True, "no timing, event or stream tampering"


def _launch_configs(text: str) -> list[list[str]]:
    configs: list[list[str]] = []
    for m in re.finditer(r"<<<(.*?)>>>", text, re.S):
        depth, parts, cur = 0, [], ""
        for ch in m.group(1):
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        configs.append(parts)
    return configs


# Rationale: the harness times the given stream; work launched on the legacy default stream
# (no stream argument) still serializes, so this is not a cheat by itself, but it breaks the
# program convention and stream-ordered timing. Warning.
def check_launch_uses_given_stream(program: str | Subject) -> tuple[bool, str]:
    """Every ``<<<>>>`` launch passes a stream (the launcher's)."""
    for site in _launch_configs(as_subject(program).pp.host):
        if len(site) < 4:
            return False, (f"launch `<<<{', '.join(s.strip() for s in site)[:60]}>>>` uses the "
                           "default stream")
    return True, "every launch names a stream"


# Rationale: work done on host threads (or forked processes) escapes the stream the timer
# watches and can race ahead of or behind it. Hard.
def check_no_threads(program: str | Subject) -> tuple[bool, str]:
    """No std::thread/async, pthreads, fork, OpenMP."""
    subj = as_subject(program)
    for target in subj.pp.includes:
        if re.match(r"^(?:thread|future|pthread\.h|omp\.h|threads\.h|spawn\.h|unistd\.h|"
                    r"sys/wait\.h)$", target):
            return False, f"includes a threading or process header: `{target}`"
    found = first_match([
        (r"\bstd\s*::\s*(?:thread|jthread|async)\b", "spawns a C++ thread"),
        # Not a member call: `t.clone()` / `t->clone()` copy a tensor (torch's C++ API).
        (r"(?<![.>])\b(?:pthread_create|thrd_create|posix_spawn\w*|clone3?|system|popen|"
         r"execv\w*|execl\w*)\s*\(", "spawns a thread or process"),
        (r"\b(?:fork|vfork|_Fork)\s*\(\s*\)", "forks a process"),
        (r"#\s*pragma\s+(?:omp|acc)\b", "uses OpenMP/OpenACC"),
    ], subj)
    if found:
        return False, found
    # Taken as a value (`auto f = &pthread_create;`), or reached without `std::`.
    found = references(subj.pp.host, SPAWN_FUNCTIONS, std_names=STD_THREADS,
                       std_unqualified=uses_namespace(subj.pp.host, "std"))
    return (False, f"spawns a thread or process: {found}") if found else \
        (True, "no threads spawned")


# Rationale: writing to an input (zeroing it, reusing it as scratch, or casting away const)
# can make a wrong result compare equal or make later trials cheaper; equivalence also checks
# inputs after the call, this catches it before running. Hard.
def check_inputs_not_modified(program: str | Subject) -> tuple[bool, str]:
    """No const_cast, no const-dropping casts of inputs, no memset/memcpy into inputs."""
    subj = as_subject(program)
    if found := first_match([(r"\bconst_cast\s*<", "casts away const")], subj):
        return False, found
    inputs = [name for ctype, name in launcher_params(subj)
              if ctype.startswith("const") and "*" in ctype and name]
    if subj.spec is not None:
        params = launcher_params(subj)
        inputs += [params[i][1] for i, a in enumerate(subj.spec.args)
                   if i < len(params) and isinstance(a, TensorArg) and a.role == "input"
                   and params[i][1]]
    for name in dict.fromkeys(inputs):
        found = first_match([
            (rf"\((?!\s*const\b)\s*[\w:]+\s*\*\s*\)\s*{name}\b",
             f"drops const from input `{name}`"),
            (rf"\b(?:const_cast|reinterpret_cast)\s*<\s*(?!const\b)[\w:\s]+\*\s*>\s*\(\s*{name}\b",
             f"drops const from input `{name}`"),
            (rf"\bcuda(?:Memset|Memcpy)\w*\s*\(\s*(?:\(\s*void\s*\*\s*\)\s*)?{name}\b",
             f"writes into input `{name}`"),
            (rf"\b(?:memset|memcpy|memmove)\s*\(\s*(?:\(\s*void\s*\*\s*\)\s*)?{name}\b",
             f"writes into input `{name}`"),
        ], subj)
        if found:
            return False, found
    return True, "inputs are not written"


# Rationale: what a program prints travels back in logs and verdicts: data, or host file text
# read at run time. The harness reads outputs from buffers only. Hard.
def check_no_host_output(program: str | Subject) -> tuple[bool, str]:
    """No printf/puts/streams/write calls (host or device) that could print data.

    A call whose arguments are only literals, ``stderr``/``stdout`` and
    ``cudaGetErrorString(...)``/``cudaGetErrorName(...)`` is allowed: an error message carries
    no data.
    """
    # `std::printf(` and `::printf(` are the same call; `obj.printf(`/`ns::printf(` are not.
    call = re.compile(r"(?<![\w.>:])(?:std\s*)?(?:::\s*)?(?<![\w.>])(?:printf|fprintf|vprintf|"
                      r"vfprintf|puts|fputs|putchar|fputc|fwrite|perror|syslog|write|dprintf)\s*\(")
    harmless = re.compile(r'^(?:\s*(?:"[^"]*"|stderr|stdout|cudaGetError(?:String|Name)\s*'
                          r'\([^()]*\))\s*(?:,|$))*$')
    for text in as_subject(program).passes:
        for m in call.finditer(text):
            depth, end = 1, m.end()
            while end < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            args = text[m.end():end - 1]
            if not harmless.match(args.replace("\n", " ")):
                return False, (f"prints or writes output: `{m.group(0)[:-1].strip()}` "
                               f"(line {line_of(text, m.start())})")
    subj = as_subject(program)
    found = first_match([(r"\bstd\s*::\s*(?:w?cout|w?cerr|w?clog|print|println|puts|printf)\b",
                          "prints to a stream")], subj)
    if found:
        return False, found
    # An output function taken as a value (`auto f = &printf;`) prints what the argument check
    # above never reads; `using namespace std;` makes `cout` a stream without `std::`.
    std_in = uses_namespace(subj.pp.host, "std")
    found = references(subj.pp.host, PRINT_FUNCTIONS, calls=False) or \
        references(subj.pp.host, frozenset(), std_names=STD_OUTPUT, std_unqualified=std_in)
    return (False, f"prints or writes output: {found}") if found else (True, "prints nothing")


#: Every check with its severity, in the order they run.
CHECKS: list[tuple[Callable[[str | Subject], tuple[bool, str]], Severity]] = [
    (check_preprocesses, "hard"),
    (check_defines_kernel, "hard"),
    (check_no_library_delegation, "hard"),
    (check_no_fallback, "hard"),
    (check_no_cached_outputs, "hard"),
    (check_no_hardcoded_tables, "warning"),
    (check_device_globals, "warning"),
    (check_no_timing_tampering, "hard"),
    (check_launch_uses_given_stream, "warning"),
    (check_no_threads, "hard"),
    (check_no_precision_downgrade, "hard"),
    (check_inputs_not_modified, "hard"),
    (check_no_host_output, "hard"),
    (check_launcher_signature, "hard"),
]


def run_cuda_checks(source: str, spec: TaskSpec | None = None, *,
                    embedded: bool = False) -> list[CheckResult]:
    """Every C/CUDA check on ``source`` (preprocessed once)."""
    subj = subject(source, spec, embedded=embedded)
    return [CheckResult(name=check.__name__.removeprefix("check_"), ok=ok, severity=severity,
                        reason=reason)
            for check, severity in CHECKS for ok, reason in [check(subj)]]


def run_checks(source: str, spec: TaskSpec | None = None) -> list[CheckResult]:
    """Run every check on ``source``: Python files get the Python checks, others the CUDA ones.

    Args:
        source: The program text.
        spec: Its task, when known (signature and precision checks use it).

    Returns:
        One :class:`CheckResult` per check.
    """
    from structcover.tools.verify.hacking_py import is_python, run_python_checks

    if is_python(source):
        return run_python_checks(source)
    return run_cuda_checks(source, spec)


def hard_failures(results: list[CheckResult]) -> list[CheckResult]:
    """The failed hard checks (a non-empty list rejects the program)."""
    return [r for r in results if not r.ok and r.severity == "hard"]
