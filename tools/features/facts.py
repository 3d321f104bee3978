"""One visit of the tree that collects every fact the feature families need.

The node types the families read are listed in ``facts.scm``; one query returns them and
they are visited in document order, tracking the enclosing function, loop depth and branch
conditions, plus the definitions of local variables, so the data-flow and memory families
work on the few nodes that matter (index expressions, conditions) without walking again.
A Python TreeCursor walk over the same node types is kept for comparison (tests, bench).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from tree_sitter import Node, QueryCursor

from structcover.tools.cuda_ast import Parsed, error_nodes, field_id, language, query
from structcover.tools.features.declarations import (
    bind_templates,
    drop_unreachable_helpers,
    function_facts,
    mark_shared_handles,
    mark_shared_params,
    shared_dims,
)
from structcover.tools.features.model import (
    LOOPS,
    NAME_TYPES,
    Facts,
    Func,
    SharedArray,
    Site,
    declarator_name,
)

_F_ARGUMENT = field_id("argument")
_F_CONDITION = field_id("condition")
_F_DECLARATOR = field_id("declarator")
_F_DIRECTIVE = field_id("directive")
_F_FIELD = field_id("field")
_F_FUNCTION = field_id("function")
_F_INITIALIZER = field_id("initializer")
_F_LEFT = field_id("left")
_F_NAME = field_id("name")
_F_OPERATOR = field_id("operator")
_F_PARAMETERS = field_id("parameters")
_F_PATH = field_id("path")
_F_RIGHT = field_id("right")
_F_SCOPE = field_id("scope")
_F_VALUE = field_id("value")



class _Walker:
    """State of the single walk (a class so the handlers share it cheaply)."""

    def __init__(self, parsed: Parsed) -> None:
        self.facts = Facts(parsed)
        self.func: Func | None = None
        self.func_end = -1
        self.loops: list[Node] = []
        self.branches: list[Node] = []
        self._loop_defs: list[tuple[bytes, Node, Node]] = []

    # -- handlers -------------------------------------------------------------------------
    def declaration(self, node: Node) -> None:
        func = self.func
        text_head = []
        extern = False
        # Most declarations are plain locals (`int i = ...`): their type words matter only
        # for __shared__ arrays and file-scope variables, so skip reading them otherwise.
        plain = func is not None and b"__shared__" not in node.text
        for child in () if plain else node.children:
            t = child.type
            if t == "type_qualifier" or t == "storage_class_specifier":
                text_head.append(child.text)
                if child.text == b"extern":
                    extern = True
            elif t in ("primitive_type", "type_identifier", "sized_type_specifier",
                       "qualified_identifier", "template_type"):
                text_head.append(child.text)
        head = b" ".join(text_head)
        is_shared = b"__shared__" in head
        for decl in node.children_by_field_id(_F_DECLARATOR):
            # `x = value` is the common declarator: read its target once, here, instead of
            # in declarator_name and again below.
            dtype = decl.type
            target = ttype = None
            if dtype == "init_declarator":
                target = decl.child_by_field_id(_F_DECLARATOR)
                ttype = target.type if target is not None else None
                name = target.text if ttype in NAME_TYPES else declarator_name(decl)
            else:
                name = declarator_name(decl)
            if name is None:
                continue
            if is_shared:
                nm, dims = shared_dims(decl)
                arr = SharedArray(name, head, dims, extern, node)
                (func.shared if func is not None else self.facts.file_shared)[name] = arr
                continue
            if func is None:
                if b"__constant__" in head:
                    self.facts.constant_vars.add(name)
                elif b"__device__" in head:
                    self.facts.device_globals.add(name)
                elif b"const" in head and dtype == "init_declarator" and ttype == "identifier":
                    value = decl.child_by_field_id(_F_VALUE)
                    if value is not None:  # constexpr int TILE = 32; static const int N = ...
                        self.facts.file_consts[name] = value
                continue
            itype = dtype
            if dtype == "function_declarator":  # `dim3 block(TILE, TILE);` parses so
                params = decl.child_by_field_id(_F_PARAMETERS)
                if params is not None:
                    func.defs.setdefault(name, []).append(("decl", params))
                continue
            if dtype == "init_declarator":
                value = decl.child_by_field_id(_F_VALUE)
                if value is not None:
                    loop = self._loop_defs[-1] if self._loop_defs else None
                    op = "for" if loop is not None and loop[1] == value else "decl"
                    func.defs.setdefault(name, []).append((op, value))
                    scope = node.parent
                    if scope is not None:
                        func.def_scope[value.start_byte] = (scope.start_byte, scope.end_byte)
                itype = ttype
            if itype == "pointer_declarator":
                func.local_ptrs.add(name)
            elif itype == "array_declarator":
                func.local_arrays.add(name)
                func.local_array_dims[name] = shared_dims(decl)[1]

    def assignment(self, node: Node) -> None:
        left = node.child_by_field_id(_F_LEFT)
        right = node.child_by_field_id(_F_RIGHT)
        if left is None or right is None or self.func is None:
            return
        op = node.child_by_field_id(_F_OPERATOR)
        optext = op.type if op is not None else "="
        if left.type == "identifier":
            self.func.defs.setdefault(left.text, []).append((optext, right))
        else:
            self.func.stores.add((left.start_byte, left.end_byte))

    def for_loop(self, node: Node) -> None:
        init = node.child_by_field_id(_F_INITIALIZER)
        if init is None or self.func is None:
            return
        if init.type == "declaration":
            for decl in init.children_by_field_id(_F_DECLARATOR):
                name = declarator_name(decl)
                if name is not None:
                    self.func.loop_vars[name] = node
                    value = decl.child_by_field_id(_F_VALUE) \
                        if decl.type == "init_declarator" else None
                    if value is not None:  # replaces the "decl" entry the declaration adds
                        self._loop_defs.append((name, value, node))
        elif init.type == "assignment_expression":
            left = init.child_by_field_id(_F_LEFT)
            if left is not None and left.type == "identifier":
                self.func.loop_vars[left.text] = node

    def call(self, node: Node) -> None:
        fn = node.child_by_field_id(_F_FUNCTION)
        facts = self.facts
        if fn is None:
            return
        t = fn.type
        if t == "identifier":
            name = fn.text
        elif t == "field_expression":
            f = fn.child_by_field_id(_F_FIELD)
            name = b"." + (f.text if f is not None else b"")
        elif t in ("qualified_identifier", "template_function"):
            name = fn.text
            if b"<" in name:
                name = name.split(b"<", 1)[0]
        else:
            return
        facts.all_calls[name] += 1
        # A launch's `<<<` token follows the function: look for the kernel_call_syntax child
        # only when those bytes hold one.
        if b"<<<" in facts.parsed.src[fn.end_byte:node.end_byte]:
            for child in node.children:
                if child.type == "kernel_call_syntax":
                    facts.launches.append(node)
        if self.func is None or not self.func.is_device:
            facts.host_calls[name] += 1
            if self.func is None:
                return
        site = Site(node, len(self.loops), tuple(self.branches), tuple(self.loops))
        self.func.calls.append((name, site))

    def run(self) -> Facts:
        """Visit the nodes of interest in document order, tracking enclosing scopes.

        The nodes come from one query (``facts.scm``): tree-sitter walks the tree in C and
        hands back only the few node types the families read, which costs a fraction of a
        Python cursor walk over every node.
        """
        facts = self.facts
        root = facts.parsed.root
        found = QueryCursor(query(_QUERY)).captures(root).get("n", [])
        found.sort(key=_doc_order)
        scopes: list[tuple[int, str]] = []
        for node in found:
            self._visit(node, scopes)
        facts.nodes = root.descendant_count
        facts.errors = error_nodes(root) if root.has_error else 0
        return facts

    def _visit(self, node: Node, scopes: list[tuple[int, str]]) -> None:
        """Close the loop/branch scopes and the function that end before ``node``, then
        dispatch it (both visits share this, so they cannot drift apart)."""
        start = node.start_byte
        while scopes and scopes[-1][0] <= start:
            if scopes.pop()[1] == "loop":
                self.loops.pop()
            else:
                self.branches.pop()
        if self.func is not None and start >= self.func_end:
            self.func = None
        self.dispatch(node, node.type, start, scopes)

    def run_cursor(self) -> Facts:
        """The same visit with a Python TreeCursor walk (reference for tests and benchmarks)."""
        facts = self.facts
        root = facts.parsed.root
        cursor = root.walk()
        scopes: list[tuple[int, str]] = []
        interesting, leaves = _kind_ids()
        while True:
            node = cursor.node
            k = node.kind_id
            if k in interesting:
                self._visit(node, scopes)
                if cursor.goto_first_child():
                    continue
            elif k not in leaves and cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    facts.nodes = root.descendant_count
                    facts.errors = error_nodes(root) if root.has_error else 0
                    return facts

    def dispatch(self, node: Node, t: str, start: int, scopes: list[tuple[int, str]]) -> None:
        """Record one node of interest."""
        facts = self.facts
        func = self.func
        # Sites (accesses, loops, branches) are read for device code only: host functions
        # keep the scope stacks in step but record no site.
        device = func is not None and func.kind != "host"
        if t == "subscript_expression" or t == "pointer_expression":
            if device and (t == "subscript_expression" or node.child(0).type == "*"):
                site = Site(node, len(self.loops), tuple(self.branches), tuple(self.loops))
                (func.subscripts if t == "subscript_expression" else func.derefs).append(site)
        elif t == "assignment_expression":
            self.assignment(node)
        elif t == "call_expression":
            self.call(node)
        elif t == "declaration":
            self.declaration(node)
        elif t in LOOPS:
            if t == "for_statement":
                self.for_loop(node)
            if device:
                func.loops.append(Site(node, len(self.loops), tuple(self.branches),
                                       tuple(self.loops)))
            self.loops.append(node)
            scopes.append((node.end_byte, "loop"))
            if device and len(self.loops) > func.max_loop_depth:
                func.max_loop_depth = len(self.loops)
        elif t in ("if_statement", "switch_statement", "conditional_expression"):
            cond = node.child_by_field_id(_F_CONDITION) if device else None
            if device:
                func.branches.append(Site(node, len(self.loops), tuple(self.branches)))
            self.branches.append(cond if cond is not None else node)
            scopes.append((node.end_byte, "branch"))
        elif t == "function_definition":
            if func is None:
                self.func = function_facts(node, facts.parsed.src)
                self.func_end = node.end_byte
                facts.funcs.append(self.func)
        elif t == "preproc_call":
            d = node.child_by_field_id(_F_DIRECTIVE)
            a = node.child_by_field_id(_F_ARGUMENT)
            if d is not None and d.text == b"#pragma" and a is not None \
                    and a.text.lstrip().startswith(b"unroll"):
                facts.pragmas_unroll += 1
        elif t == "preproc_def":
            n = node.child_by_field_id(_F_NAME)
            v = node.child_by_field_id(_F_VALUE)
            if n is not None and v is not None:
                facts.macros[n.text] = v.text.strip()
        elif t == "template_declaration":
            facts.templates += 1
        elif t == "launch_bounds":
            facts.launch_bounds += 1
        elif t == "gnu_asm_expression":
            facts.asm.append(node.text)
        elif t == "qualified_identifier":
            scope = node.child_by_field_id(_F_SCOPE)
            if scope is not None:
                facts.qualified[scope.text] += 1
        elif t == "preproc_include":
            p = node.child_by_field_id(_F_PATH)
            if p is not None:
                facts.includes.append(p.text)


#: Subtrees that hold nothing the families read: the walk does not descend into them.
_OPAQUE = frozenset({"identifier", "number_literal", "string_literal", "primitive_type",
                     "type_identifier", "field_identifier", "comment", "parameter_list",
                     "template_argument_list", "type_descriptor", "system_lib_string",
                     "char_literal", "raw_string_literal", "sized_type_specifier",
                     "type_qualifier", "storage_class_specifier", "template_parameter_list"})


@lru_cache(maxsize=1)
def _kind_ids() -> tuple[frozenset[int], frozenset[int]]:
    """Numeric kind ids of the interesting and opaque node types (ints compare faster than
    the type strings the walk would otherwise build for every node)."""
    lang = language()
    interesting: set[int] = set()
    opaque: set[int] = set()
    for kid in range(lang.node_kind_count):
        name = lang.node_kind_for_id(kid)
        if name in _INTERESTING:
            interesting.add(kid)
        elif name in _OPAQUE:
            opaque.add(kid)
    return frozenset(interesting), frozenset(opaque)


_INTERESTING = frozenset({
    "subscript_expression", "pointer_expression", "assignment_expression", "call_expression",
    "declaration", *LOOPS, "if_statement", "switch_statement", "conditional_expression",
    "function_definition", "preproc_call", "preproc_def", "template_declaration",
    "launch_bounds", "gnu_asm_expression", "qualified_identifier", "preproc_include"})


def _doc_order(node: Node) -> tuple[int, int]:
    return node.start_byte, -node.end_byte


_QUERY = (Path(__file__).with_name("facts.scm")).read_text()


def collect(parsed: Parsed, cursor_walk: bool = False, keep_unused: bool = False) -> Facts:
    """Visit ``parsed`` once and return its facts.

    Args:
        parsed: The parse.
        cursor_walk: Use a Python TreeCursor walk instead of the query (same facts).
        keep_unused: Keep ``__device__`` helpers no kernel or host function calls (by
            default they are dropped: dead code is not the program's structure).
    """
    walker = _Walker(parsed)
    facts = walker.run_cursor() if cursor_walk else walker.run()
    mark_shared_handles(facts)
    if not keep_unused:
        drop_unreachable_helpers(facts)
    mark_shared_params(facts)
    bind_templates(facts)
    return facts
