"""Stopped names however a program refers to them: the spelling side of the anti-hacking checks.

The checks in ``hacking.py`` read the preprocessed text, so macros, ``#if`` branches, comments
and strings cannot hide a name. What remains are the ways C++ lets a program reach a function
without writing ``name(`` at the call, each closed here by what the name *resolves to*, not
by another spelling of it:

* **namespace aliases** (``namespace S = std; S::thread``) are spelled out before any check
  reads the text (:func:`resolve_namespace_aliases`);
* **references** (:func:`references`): a stopped function taken as a value (``auto f = &fork;``,
  ``auto& f = usleep;``, ``decltype(&clock)``, ``wrap(popen, ...)``, ``(printf)(...)``) or a
  ``std`` name reached unqualified (``using namespace std; thread t(f);``, argument-dependent
  lookup of ``async(std::launch::async, f)``). The host pass is parsed (tree-sitter) and every
  use of a name is resolved by C++'s own rule for it: a member (``t.clone()``), a name in another
  namespace (``at::clone``), a variable, parameter or field of that name in an enclosing scope
  (``int clock = 0; ... clock``) and the program's own function of that name are not the
  library's; anything else is. Declaring an unrelated ``int fork;`` elsewhere does not hide a
  use: only a declaration in scope at the use does;
* **symbol renaming** (:func:`renamed_symbol`): an ``asm`` label (``extern "C" int f(...)
  asm("pthread_" "create")``), a ``weakref``/``alias`` attribute or a ``#pragma
  redefine_extname``/``weak`` binds a local name to any symbol, the string split so no check
  reads it. Honest programs never rename a symbol, so every such binding is refused; compiled
  objects are also read by the link check (``link_check.py``), which sees the symbol itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from structcover.tools.cuda_ast import parser
from structcover.tools.verify.host_builtins import device_marked

__all__ = ["PRINT_FUNCTIONS", "SPAWN_FUNCTIONS", "STD_OUTPUT", "STD_THREADS", "TIMER_FUNCTIONS",
           "references", "renamed_symbol", "resolve_namespace_aliases", "uses_namespace"]

#: ``std`` names that start work off the timed stream (also found unqualified, see module doc).
STD_THREADS = frozenset({"thread", "jthread", "async"})
#: ``std`` stream objects that print.
STD_OUTPUT = frozenset({"cout", "cerr", "clog", "wcout", "wcerr", "wclog", "print", "println"})
#: Host timers and sleeps, found however referred to (:func:`references`).
TIMER_FUNCTIONS = frozenset({
    "clock", "clock_gettime", "gettimeofday", "time", "timespec_get", "QueryPerformanceCounter",
    "sleep", "usleep", "nanosleep", "__rdtsc", "__rdtscp", "__builtin_ia32_rdtsc",
    "__builtin_ia32_rdtscp", "__builtin_readcyclecounter"})
#: Thread and process starters, found however referred to.
SPAWN_FUNCTIONS = frozenset({
    "pthread_create", "thrd_create", "posix_spawn", "posix_spawnp", "clone", "clone3",
    "system", "popen", "fork", "vfork", "_Fork", "execv", "execve", "execvp", "execvpe",
    "execl", "execle", "execlp", "fexecve"})
#: Output functions: their calls are judged by their arguments, any other use is refused.
PRINT_FUNCTIONS = frozenset({
    "printf", "fprintf", "vprintf", "vfprintf", "puts", "fputs", "putchar", "fputc", "fwrite",
    "perror", "syslog", "write", "dprintf"})
#: Found unqualified even without ``using namespace std``: argument-dependent lookup reaches
#: ``std::async`` from a ``std::launch`` argument.
_ADL_REACHED = frozenset({"async"})

_NS_ALIAS = re.compile(r"\bnamespace\s+(\w+)\s*=\s*((?:::\s*)?\w+(?:\s*::\s*\w+)*)\s*;")
_NS_OPEN = re.compile(r"\bnamespace\s+(\w+)\s*\{")
_USING_NS = re.compile(r"\busing\s+namespace\s+((?:::\s*)?\w+(?:\s*::\s*\w+)*)\s*;")
_ASM_LABEL = re.compile(r"(?:[\w)\]])\s*(?:__asm__|__asm|asm)\s*\(\s*(?:\"(?:\\.|[^\"\\\n])*\"\s*)+\)")
_RENAMING = re.compile(
    r"__attribute__\s*\(\s*\([^;{}]*?\b(?:__)?(?:weakref|alias)(?:__)?\b"
    r"|\[\[\s*(?:gnu|__gnu__)\s*::\s*(?:__)?(?:weakref|alias)(?:__)?\b"
    r"|^\s*#\s*pragma\s+(?:redefine_extname|weak)\b", re.M)
_NAME_NODES = frozenset({"identifier", "type_identifier"})
_SCOPES = frozenset({"compound_statement", "translation_unit", "declaration_list",
                     "field_declaration_list", "for_statement", "for_range_loop",
                     "function_definition", "lambda_expression", "catch_clause", "if_statement",
                     "while_statement", "switch_statement"})
_DECLARATIONS = frozenset({"declaration", "field_declaration", "parameter_declaration",
                           "optional_parameter_declaration", "condition_clause"})


def resolve_namespace_aliases(text: str, roots: tuple[str, ...]) -> str:
    """``text`` with aliases of the namespaces ``roots`` spelled out and their declarations
    blanked (newlines kept), chains included: ``namespace U = std; namespace C = U::chrono;``.
    A namespace that pulls one in (``namespace A { using namespace torch; }``) counts as an
    alias too: ``A::mm`` finds torch's ``mm`` (A's own names first, which the rewrite may then
    misname; no honest program needs such a namespace).
    """
    pulled: dict[str, str] = {}
    for m in _NS_OPEN.finditer(text):
        for used in _USING_NS.finditer(_braced(text, m.end() - 1)):
            target = re.sub(r"\s+", "", used.group(1)).removeprefix("::")
            if target.split("::")[0] in roots:
                pulled.setdefault(m.group(1), target)
    for name, target in pulled.items():
        text = re.sub(rf"(?<![\w.:])(?:::\s*)?\b{re.escape(name)}\s*::", target + "::", text)
    for _ in range(4):
        changed = False
        for m in list(_NS_ALIAS.finditer(text)):
            target = re.sub(r"\s+", "", m.group(2)).removeprefix("::")
            if target.split("::")[0] not in roots:
                continue
            alias = m.group(1)
            text = text[:m.start()] + re.sub(r"[^\n]", " ", m.group(0)) + text[m.end():]
            text = re.sub(rf"(?<![\w.:])(?:::\s*)?\b{re.escape(alias)}\s*::", target + "::", text)
            changed = True
            break
        if not changed:
            break
    return text


def _braced(text: str, start: int) -> str:
    """The text inside the braces opening at ``text[start]`` (to the end if never closed)."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1:i]
    return text[start + 1:]


def uses_namespace(text: str, namespace: str) -> bool:
    """Whether a ``using namespace`` directive for ``namespace`` (``std``, ``torch`` ...) is there."""
    return bool(re.search(rf"\busing\s+namespace\s+(?:::\s*)?{namespace}\s*;", text))


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def renamed_symbol(host: str) -> str | None:
    """An asm label, ``weakref``/``alias`` attribute or renaming pragma in host text, described."""
    for m in (_ASM_LABEL.search(_host_only(host)), _RENAMING.search(host)):
        if m:
            return (f"binds a name to another symbol (asm label, weakref/alias, pragma): "
                    f"`{m.group(0).strip()[:60]}` (line {_line(host, m.start())})")
    return None


def _host_only(text: str) -> str:
    """``text`` with the bodies of device functions blanked: a statement ``if (c) asm("trap;");``
    in a kernel is inline PTX, not a label."""
    src = text.encode("utf-8", "surrogatepass")
    out = bytearray(src)
    for node in _walk(parser().parse(src).root_node, src, skip_device=False):
        if node.type == "function_definition" and _device_only(node, src):
            out[node.start_byte:node.end_byte] = re.sub(rb"[^\n]", b" ",
                                                         src[node.start_byte:node.end_byte])
    return out.decode("utf-8", "surrogatepass")


def _device_only(node: Node, src: bytes) -> bool:
    """A device function or lambda that is not also host code (``__host__ __device__`` code
    runs on the host too, where a ``#ifndef __CUDA_ARCH__`` branch may call anything)."""
    body = node.child_by_field_name("body")
    head = src[node.start_byte:body.start_byte if body is not None else node.end_byte]
    return device_marked(node, src) and b"__host__" not in head


def _walk(root: Node, src: bytes, *, skip_device: bool) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        if skip_device and node.type in ("function_definition", "lambda_expression") and \
                _device_only(node, src):
            continue
        yield node
        stack.extend(reversed(node.children))


def _declarator_name(node: Node | None) -> tuple[Node | None, bool]:
    """The identifier a declarator declares, and whether it declares a function (not a pointer
    to one: ``int (*f)(int)`` is a variable)."""
    function = False
    while node is not None and node.type not in ("identifier", "field_identifier",
                                                  "type_identifier", "qualified_identifier"):
        if node.type == "function_declarator":
            function = True
        elif node.type in ("pointer_declarator", "reference_declarator"):
            function = False
        inner = node.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in node.named_children if c.type != "type_qualifier"), None)
        node = inner
    return node, function


def _declares_variable(decl: Node, name: str) -> bool:
    """Whether declaration ``decl`` declares a variable, parameter or field called ``name``."""
    for declarator in decl.children_by_field_name("declarator"):
        ident, function = _declarator_name(declarator)
        if ident is not None and not function and (ident.text or b'').decode(errors="replace") == name:
            return True
    return False


def _scope_declarations(scope: Node) -> Iterator[Node]:
    """The declarations a scope introduces: its statements, a function's, lambda's or
    handler's parameters, a condition's initializer."""
    yield from (c for c in scope.children if c.type in _DECLARATIONS)
    for field in ("declarator", "parameters", "condition", "initializer"):
        sub = scope.child_by_field_name(field)
        if sub is not None and scope.type != "translation_unit":
            yield from (n for n in _walk(sub, b"", skip_device=False) if n.type in _DECLARATIONS)


def _shadowed(node: Node, name: str) -> bool:
    """Whether a variable, parameter or field ``name`` is declared in a scope around ``node``
    before it (C++'s unqualified lookup stops there, before reaching the library's name)."""
    cur = node
    while cur.parent is not None:
        scope = cur.parent
        if scope.type == "for_range_loop":
            ident, _ = _declarator_name(scope.child_by_field_name("declarator"))
            if ident is not None and (ident.text or b'').decode(errors="replace") == name:
                return True
        if scope.type in _SCOPES and any(d.start_byte < node.start_byte and
                                         _declares_variable(d, name)
                                         for d in _scope_declarations(scope)):
            return True
        cur = scope
    return False


def _own_functions(root: Node) -> set[str]:
    """Names of the functions the program defines (with a body): calls to them are its own."""
    own = set()
    for node in _walk(root, b"", skip_device=False):
        if node.type == "function_definition":
            ident, _ = _declarator_name(node.child_by_field_name("declarator"))
            if ident is not None and ident.type != "qualified_identifier":
                own.add((ident.text or b'').decode(errors="replace"))
    return own


def _is_declared_here(node: Node) -> bool:
    """Whether ``node`` is the name a variable, parameter or field declaration declares (not a
    use of it; a function's prototype is a use: it re-declares the library's function)."""
    cur = node
    while cur.parent is not None and cur.parent.type in (
            "init_declarator", "pointer_declarator", "reference_declarator", "array_declarator",
            "parenthesized_declarator") and cur.parent.child_by_field_name("declarator") == cur:
        cur = cur.parent
    parent = cur.parent
    return parent is not None and parent.type in _DECLARATIONS and \
        cur in parent.children_by_field_name("declarator")


def references(text: str, names: frozenset[str], *, std_names: frozenset[str] = frozenset(),
               std_unqualified: bool = False, calls: bool = True) -> str | None:
    """The first use in host code of a library name, described; None if none.

    Args:
        text: A preprocessed host pass.
        names: C library functions: a use unqualified (not shadowed), ``::name`` or
            ``std::name`` is the library's.
        std_names: ``std`` members: a use ``std::name`` is the library's, and an unqualified
            one (or one under another namespace) only when ``std_unqualified``, or for names
            argument-dependent lookup reaches (``async``).
        std_unqualified: Whether ``using namespace std`` brings ``std_names`` in.
        calls: Whether direct calls ``name(...)`` count too (False when another rule judges the
            calls, e.g. the output check reads a ``printf``'s arguments).

    Returns:
        ``"`name` (line N)"`` for the first use that resolves to the library's name.
    """
    wanted = names | std_names
    if not re.search(r"\b(?:" + "|".join(map(re.escape, sorted(wanted))) + r")\b", text):
        return None
    src = text.encode("utf-8", "surrogatepass")
    root = parser().parse(src).root_node
    own = _own_functions(root)
    for node in _walk(root, src, skip_device=True):
        name = (node.text or b'').decode(errors="replace") if node.type in _NAME_NODES else ""
        if name not in wanted:
            continue
        parent = node.parent
        unqualified_std = std_unqualified or name in _ADL_REACHED
        if parent is not None and parent.type == "qualified_identifier" and \
                parent.child_by_field_name("name") == node:
            scope = parent.child_by_field_name("scope")
            qualifier = (scope.text or b'').decode(errors="replace") if scope is not None else ""
            library = (qualifier in ("", "std") and name in names) or qualifier == "std" or \
                (name in std_names and unqualified_std)
            if not library:
                continue  # another namespace's entity of the same name (`at::clone`)
        elif name in own or _is_declared_here(node) or _shadowed(node, name) or \
                (name not in names and not unqualified_std):
            continue
        if not calls and parent is not None and parent.type == "call_expression" and \
                parent.child_by_field_name("function") == node:
            continue
        return f"`{name}` (line {node.start_point[0] + 1})"
    return None
