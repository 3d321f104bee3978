"""Names a function does not define, resolved where the source fixes them.

The resolver (:class:`~structcover.tools.features.dataflow.Resolver`) asks here for a name
with no definition in its function: a template parameter (bound at the first launch, in the
launching function's scope, or by an explicit instantiation or default), a ``__device__``
helper's value parameter (bound at its first call site, in the caller's terms), a file-scope
constant, a ``#define``. Kept apart from the def-use evaluation so each module has one job.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id, parse
from structcover.tools.features.model import Facts, Func
from structcover.tools.features.poly import Indirect, NotAffine, Poly
from structcover.tools.features.poly import parse_number as _number

if TYPE_CHECKING:
    from typing import Self

_F_ARGUMENTS = field_id("arguments")
_F_DECLARATOR = field_id("declarator")
_F_VALUE = field_id("value")

_MAX_BIND_DEPTH = 3
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_BIND_DEPTH = 0  # helper-parameter bindings in progress (a guard against deep call chains)


def macro_expression(facts: Facts, name: bytes) -> Node | None:
    """The expression a ``#define`` stands for (``#define BM (64)``), parsed once per
    program; None when the macro is not an expression."""
    cache = facts.macro_nodes
    if name not in cache:
        text = facts.macros.get(name, b"")
        tree = parse(b"int __m = " + text + b";")
        node = None
        if not tree.root.has_error:
            decl = tree.root.named_children[0] if tree.root.named_children else None
            init = decl.child_by_field_id(_F_DECLARATOR) if decl is not None else None
            node = init.child_by_field_id(_F_VALUE) if init is not None else None
        cache[name] = (tree, node)
    return cache[name][1]


class OuterScope:
    """What a resolver knows about names outside its function (a mixin of ``Resolver``)."""

    facts: Facts
    func: Func

    @classmethod
    def of(cls, facts: Facts, func: Func) -> Self:
        """The resolver of ``func``, shared through ``facts.resolvers`` (made on first use)."""
        res = facts.resolvers.get(id(func))
        if res is None:
            res = facts.resolvers[id(func)] = cls(facts, func)  # type: ignore[call-arg]
        return res

    if TYPE_CHECKING:  # provided by the resolver
        def _eval(self, node: Node, depth: int) -> tuple[Poly, int]: ...
        def variable(self, name: bytes, at: int | None = None) -> tuple[Poly, int]: ...
        def resolve(self, node: Node) -> tuple[Poly, int]: ...

    def _outer(self, name: bytes) -> tuple[Poly, int] | None:
        """Value of a name the function does not define: a template parameter the source
        fixes, a helper's parameter bound at its call site, a file-scope constant, a macro."""
        func = self.func
        tval = func.template_values.get(name)
        if tval is not None:
            at_launch = self._in_launching_scope(tval)
            if at_launch is not None:
                return at_launch
            if tval.type in ("type_descriptor", "identifier", "type_identifier"):
                return self._global(tval.text.strip())
            return self._eval(tval, 1)[0], 1
        param = func.params.get(name)
        if param is not None:
            return None if param.pointer else self._bind_param(name)
        return self._global(name)

    def _in_launching_scope(self, arg: Node) -> tuple[Poly, int] | None:
        """A template argument written inside a function (``k<BM, BN><<<...>>>`` with ``BM``
        a local ``const`` of the host function that launches): its value in that function's
        scope, where its names are declared. None for an argument at file scope (explicit
        instantiation, default) or one that scope does not reduce."""
        global _BIND_DEPTH
        node = arg.parent
        while node is not None and node.type != "function_definition":
            node = node.parent
        if node is None or _BIND_DEPTH >= _MAX_BIND_DEPTH:
            return None
        host = next((f for f in self.facts.funcs if f.node.start_byte == node.start_byte
                     and f.node.end_byte == node.end_byte), None)
        if host is None or host is self.func:
            return None
        res = self.of(self.facts, host)
        _BIND_DEPTH += 1
        try:
            text = arg.text.strip()
            # ``k<BM>``: tree-sitter reads a bare name as a type; a value it names is a local.
            poly, chain = (res.variable(text, arg.start_byte)
                           if arg.type == "type_descriptor" and _IDENT.fullmatch(text)
                           else res.resolve(arg))
        except (NotAffine, Indirect):
            return None
        finally:
            _BIND_DEPTH -= 1
        return poly, chain + 1

    def _global(self, name: bytes) -> tuple[Poly, int] | None:
        """A file-scope constant or a macro with a constant (or affine) value."""
        value = self.facts.file_consts.get(name)
        if value is not None:
            return self._eval(value, 1)[0], 1
        macro = self.facts.macros.get(name)
        if macro is None:
            return None
        try:
            return {(): _number(macro)}, 0
        except ValueError:
            node = macro_expression(self.facts, name)
            return (self._eval(node, 1)[0], 1) if node is not None else None

    def _bind_param(self, name: bytes) -> tuple[Poly, int] | None:
        """A ``__device__`` helper's value parameter, resolved at its first call site in the
        caller's terms (bounded depth: helpers calling helpers)."""
        global _BIND_DEPTH
        sites = self.facts.calls_to.get(self.func.name) if self.func.kind == "device" else None
        if not sites or _BIND_DEPTH >= _MAX_BIND_DEPTH:
            return None
        caller, call = sites[0]
        args = call.child_by_field_id(_F_ARGUMENTS)
        index = list(self.func.params).index(name)
        if args is None or index >= len(args.named_children):
            return None
        res = self.of(self.facts, caller)
        _BIND_DEPTH += 1
        try:
            poly, chain = res.resolve(args.named_children[index])
        finally:
            _BIND_DEPTH -= 1
        return poly, chain + 1
