"""Static policy for untrusted programs: refuse host code that reaches outside the sandbox.

Programs may only launch kernels and manage device memory from the host (program convention).
Before anything is compiled or run, ``check_host_policy`` parses the source with the
tree-sitter CUDA grammar and looks at *code*, not text: names in comments and string literals
do not count, names spelled through macros or line splices do. Each rule has its rationale:

* files: ``fopen``/``open``/``ifstream``/``std::filesystem``/``remove``/``unlink``/``rename``…
  — a program could read the reference, cached outputs or the user's files, or delete them.
* processes: ``system``/``popen``/``fork``/``exec*``/``posix_spawn``/``kill``/``syscall`` —
  escape the launcher entirely.
* network: ``socket``/``connect``/``getaddrinfo``/``curl_*`` — exfiltration or fetching answers.
* dynamic code: ``dlopen``/``dlsym``/``mmap``/``mprotect`` — load or forge code the policy
  never saw.
* ``asm`` in host code (device inline PTX is allowed here; the emulator reports it unsupported)
  — raw syscalls bypass every name above.
* includes: only the headers of the program convention and a few harmless standard ones;
  quoted (local) includes are refused — a program is one file.
* ``##`` token pasting and identifiers with escapes or non-ASCII characters — they can build a
  refused name the parser would never see.

The policy is an early, friendly refusal with a line number, not the guarantee: it is a
denylist over a parse and misses names in string literals, asm labels and much else. The
guarantee is the jail every program is compiled and run in (``jail.py``, docs/SANDBOX.md).
"""

from __future__ import annotations

import re
from functools import lru_cache

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser

_FILES = {"fopen", "fopen64", "freopen", "fdopen", "open", "open64", "openat", "creat",
          "ifstream", "ofstream", "fstream", "filebuf", "basic_ifstream", "basic_ofstream",
          "basic_fstream", "filesystem", "remove", "unlink", "unlinkat", "rename", "renameat",
          "rmdir", "mkdir", "mkdirat", "truncate", "ftruncate", "chmod", "chown", "symlink",
          "link", "opendir", "readdir", "tmpfile", "tmpnam", "mkstemp", "remove_all"}
_PROCESSES = {"system", "popen", "fork", "vfork", "clone", "execl", "execlp", "execle", "execv",
              "execvp", "execvpe", "execve", "fexecve", "posix_spawn", "posix_spawnp", "kill",
              "syscall", "ptrace", "daemon", "setuid", "prctl"}
_NETWORK = {"socket", "connect", "bind", "listen", "accept", "accept4", "sendto", "recvfrom",
            "sendmsg", "recvmsg", "getaddrinfo", "gethostbyname", "inet_addr", "inet_pton"}
_DYNAMIC = {"dlopen", "dlsym", "dlmopen", "mmap", "mprotect"}
_CATEGORY = {**{n: "opens or changes files" for n in _FILES},
             **{n: "spawns or controls processes" for n in _PROCESSES},
             **{n: "uses the network" for n in _NETWORK},
             **{n: "loads or forges code at run time" for n in _DYNAMIC}}
_PREFIXES = {"curl_": "uses the network", "CURL": "uses the network"}

#: Headers a program may include (program convention plus harmless standard headers).
ALLOWED_INCLUDES = frozenset({
    "cuda_runtime.h", "cuda_runtime_api.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h",
    "cooperative_groups.h", "cooperative_groups/reduce.h", "cooperative_groups/scan.h",
    "cooperative_groups/memcpy_async.h", "mma.h", "vector_types.h", "vector_functions.h",
    "device_launch_parameters.h",
    "stdint.h", "cstdint", "math.h", "cmath", "stdio.h", "cstdio", "float.h", "cfloat",
    "limits.h", "climits", "stddef.h", "cstddef", "assert.h", "cassert", "stdlib.h", "cstdlib",
    "string.h", "cstring", "type_traits", "utility", "algorithm", "limits",
})
_NAME_NODES = {"identifier", "type_identifier", "namespace_identifier"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_cuda.language()))


def _flag_name(name: str) -> str | None:
    if name in _CATEGORY:
        return _CATEGORY[name]
    for prefix, why in _PREFIXES.items():
        if name.startswith(prefix):
            return why
    return None


def _is_device_function(node: Node) -> bool:
    kinds = {c.type for c in node.children}
    return ("__global__" in kinds or "__device__" in kinds) and "__host__" not in kinds


def _line(node: Node) -> int:
    return node.start_point[0] + 1


def _check_include(node: Node) -> str | None:
    path = node.child_by_field_name("path")
    if path is None:
        return f"line {_line(node)}: unparsable #include"
    text = path.text.decode(errors="replace")
    if path.type != "system_lib_string":
        return f"line {_line(node)}: local include {text} refused (a program is one file)"
    header = text.strip("<>").strip()
    if header not in ALLOWED_INCLUDES:
        return f"line {_line(node)}: include <{header}> is not on the allowed list"
    return None


def _scan_text(text: str, line: int, what: str) -> list[str]:
    """Check raw text the grammar does not break into names (macro bodies, ERROR nodes)."""
    reasons = []
    if "##" in text:
        reasons.append(f"line {line}: token pasting (##) in {what} can hide a refused name")
    for name in _IDENT.findall(text):
        why = _flag_name(name)
        if why:
            reasons.append(f"line {line}: {what} names {name!r} ({why})")
    return reasons


def check_host_policy(source: str) -> list[str]:
    """Return the reasons ``source`` must not run (empty = allowed).

    Args:
        source: Full program text.

    Returns:
        One human-readable reason per violation, with its line number.
    """
    # Splice continued lines first, as the preprocessor does, so `fo\\\npen` is seen as fopen.
    spliced = re.sub(r"\\\r?\n", "", source)
    tree = _parser().parse(spliced.encode("utf-8", "surrogatepass"))
    reasons: list[str] = []
    stack: list[tuple[Node, bool]] = [(tree.root_node, False)]
    while stack:
        node, in_device = stack.pop()
        kind = node.type
        if kind in ("comment", "string_literal", "raw_string_literal", "char_literal",
                    "system_lib_string"):
            continue
        if kind == "preproc_include":
            reason = _check_include(node)
            if reason:
                reasons.append(reason)
            continue
        if kind == "preproc_arg":
            reasons += _scan_text(node.text.decode(errors="replace"), _line(node), "macro")
            continue
        if kind == "ERROR":
            reasons += _scan_text(node.text.decode(errors="replace"), _line(node),
                                  "unparsable code")
        if kind == "function_definition" and _is_device_function(node):
            in_device = True
        if kind in ("gnu_asm_expression", "asm_statement") and not in_device:
            reasons.append(f"line {_line(node)}: inline assembly in host code")
            continue
        if kind in _NAME_NODES:
            text = node.text.decode(errors="replace")
            if not text.isascii() or "\\" in text:
                reasons.append(f"line {_line(node)}: identifier {text!r} has escapes or "
                               "non-ASCII characters")
            why = _flag_name(text)
            if why:
                where = "device" if in_device else "host"
                reasons.append(f"line {_line(node)}: {where} code names {text!r} ({why})")
        stack.extend((child, in_device) for child in reversed(node.children))
    return sorted(set(reasons), key=lambda r: (int(r.split()[1].rstrip(":")), r))
