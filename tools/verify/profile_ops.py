"""Executed-operation edits of the profile variant (``profile_rewrite``): arithmetic of device code
through the runtime's counting helpers (``runtime/sc_prof.hpp``).

No type is inferred here: each operator becomes a call the C++ compiler resolves, and the helper
counts by the C++ type of the result (float -> fp32, double -> fp64, ``__half`` -> fp16,
``__nv_bfloat16`` -> bf16, integers and pointers -> int; class types are not counted, their
operators' device bodies are). The edits only insert text and turn an operator token into a
comma, so lines stay where they were:

* ``a OP b`` (``+ - * / % << >> & | ^``) -> ``::sc::op_add(a, b)`` ...;
* a product written directly as an operand of ``+`` / ``-`` -> ``::sc::op_mad(a, b, c)`` (and
  ``op_msb``, ``op_amd``, ``op_smd``): the same expression, one fused multiply-add when the
  product and the sum have the same class (nvcc contracts them by default);
* ``x OP= y`` -> ``x OP= ::sc::op_ca_add(SC_PT((x)), y)`` (``x += a * b``: ``op_cfma``), the
  assignment itself unchanged (the strict rewriter still sees it);
* ``++x`` / ``x--`` -> ``(::sc::op_inc(SC_PT((x))), ++x)``;
* calls of math functions and arithmetic intrinsics -> ``::sc::op_call_special(expf(x))`` etc.

Not counted: comparisons, unary ``-`` / ``!`` / ``~``, ``&&`` / ``||``, min/max/abs, conversions,
address arithmetic that is not written out (``a[i]`` itself), expressions in constant contexts
(the helpers are constexpr and count only when evaluated at run time), macro bodies, and
expressions of literals and ``<math.h>`` constants alone (``sqrt(2.0f / M_PI)``,
``1.0 / 3``): nvcc folds them at compile time, math library calls included (checked in
the SASS of CUDA 13 for sm_89), so a GPU never executes them.
"""

from __future__ import annotations

from tree_sitter import Node

#: Binary operators and their helper.
BINARY = {"+": "op_add", "-": "op_sub", "*": "op_mul", "/": "op_div", "%": "op_mod",
          "<<": "op_shl", ">>": "op_shr", "&": "op_and", "|": "op_or", "^": "op_xor"}
#: Compound assignments and their helper.
COMPOUND = {"+=": "op_ca_add", "-=": "op_ca_add", "*=": "op_ca_mul", "/=": "op_ca_div",
            "%=": "op_ca_div", "<<=": "op_ca_logic", ">>=": "op_ca_logic", "&=": "op_ca_logic",
            "|=": "op_ca_logic", "^=": "op_ca_logic"}
_FMA = ("fmaf fma __fmaf_rn __fmaf_rz __fmaf_ru __fmaf_rd __fmaf_ieee_rn __fma_rn __fma_rz "
        "__fma_ru __fma_rd __hfma __hfma2 __hfma_sat __hfma2_sat").split()
_ADD = ("__fadd_rn __fadd_rz __fadd_ru __fadd_rd __fsub_rn __fsub_rz __fsub_ru __fsub_rd "
        "__dadd_rn __dadd_rz __dadd_ru __dadd_rd __dsub_rn __dsub_rz __dsub_ru __dsub_rd "
        "__hadd __hsub __hadd2 __hsub2 __hadd_sat __hsub_sat __hadd2_sat __hsub2_sat").split()
_MUL = ("__fmul_rn __fmul_rz __fmul_ru __fmul_rd __dmul_rn __dmul_rz __dmul_ru __dmul_rd "
        "__hmul __hmul2 __hmul_sat __hmul2_sat").split()
_DIV = ("__fdividef fdividef __fdiv_rn __fdiv_rz __fdiv_ru __fdiv_rd __ddiv_rn __ddiv_rz "
        "__ddiv_ru __ddiv_rd __hdiv __h2div __frcp_rn __frcp_rz __frcp_ru __frcp_rd __drcp_rn").split()
_SPECIAL = ("expf exp __expf exp2f exp2 exp10f exp10 __exp10f expm1f expm1 logf log __logf log2f "
            "log2 __log2f log10f log10 __log10f log1pf log1p sinf sin __sinf cosf cos __cosf "
            "tanf tan __tanf sinpif sinpi cospif cospi tanhf tanh sinhf sinh coshf cosh asinf "
            "asin acosf acos atanf atan atan2f atan2 asinhf asinh acoshf acosh atanhf atanh "
            "sqrtf sqrt __fsqrt_rn __fsqrt_rz __fsqrt_ru __fsqrt_rd __dsqrt_rn rsqrtf rsqrt "
            "__frsqrt_rn cbrtf cbrt rcbrtf rcbrt powf pow __powf erff erf erfcf erfc erfinvf "
            "erfinv normcdff normcdf lgammaf lgamma tgammaf tgamma hexp hexp2 hexp10 hlog hlog2 "
            "hlog10 hsqrt hrsqrt hrcp hsin hcos htanh h2exp h2exp2 h2log h2log2 h2sqrt h2rsqrt "
            "h2rcp h2sin h2cos h2tanh").split()
#: Called function name -> helper.
CALLS = {**{n: "op_call_fma" for n in _FMA}, **{n: "op_call_add" for n in _ADD},
         **{n: "op_call_mul" for n in _MUL}, **{n: "op_call_div" for n in _DIV},
         **{n: "op_call_special" for n in _SPECIAL}}
_FUSED = {("left", "+"): "op_mad", ("left", "-"): "op_msb", ("right", "+"): "op_amd",
          ("right", "-"): "op_smd"}
_SKIP = ("sizeof_expression", "alignof_expression", "decltype", "offsetof_expression",
         "template_argument_list", "type_descriptor", "static_assert_declaration",
         "preproc_def", "preproc_function_def", "preproc_call", "struct_specifier",
         "class_specifier", "union_specifier", "enum_specifier", "parameter_list")

#: ``<math.h>`` constants (macros expanding to a literal).
MATH_CONSTANTS = frozenset(("M_E M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI "
                            "M_2_SQRTPI M_SQRT2 M_SQRT1_2").split())
_LITERALS = ("number_literal", "char_literal", "true", "false")
_CONST_WRAPPERS = ("parenthesized_expression", "unary_expression", "binary_expression",
                   "cast_expression", "argument_list")

Wrap = tuple[int, int, str, str]
Sub = tuple[int, int, str]


def _text(node: Node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _flat(node: Node, src: bytes) -> str | None:
    """The node's text on one line (it is copied into an unevaluated ``decltype``: the copy must
    not add lines); None when it cannot be (a ``//`` comment or a directive inside)."""
    text = _text(node, src)
    if "\n" not in text:
        return text
    if "//" in text or "#" in text:
        return None
    return " ".join(text.split())


def _operator(node: Node) -> Node | None:
    return node.child_by_field_name("operator")


def _is_product(node: Node | None, src: bytes) -> bool:
    op = _operator(node) if node is not None and node.type == "binary_expression" else None
    return op is not None and _text(op, src) == "*"


def _maybe_cast(node: Node, src: bytes) -> bool:
    """``(T) * p``, ``(T) - x``: the grammar cannot tell a cast of a type name from an operand."""
    left = node.child_by_field_name("left")
    if left is None or left.type != "parenthesized_expression":
        return False
    inner = [c for c in left.named_children if c.type != "comment"]
    return len(inner) == 1 and inner[0].type in ("identifier", "qualified_identifier")


def _misparsed_declaration(node: Node) -> bool:
    """``T * p;`` / ``T & r = x;`` read as expressions (T a type the grammar does not know)."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "expression_statement":
        return True
    left = parent.child_by_field_name("left")
    return parent.type == "assignment_expression" and left is not None and left.id == node.id


def _called_name(call: Node, src: bytes) -> str | None:
    fn = call.child_by_field_name("function")
    if fn is None:
        return None
    if fn.type == "qualified_identifier":
        name = fn.child_by_field_name("name")
        fn = name if name is not None else fn
    return _text(fn, src) if fn.type == "identifier" else None


def _constant(node: Node, src: bytes) -> bool:
    """Whether ``node`` is built of literals and math constants alone, so the compiler folds
    it: literals, ``M_PI`` and the like, and operators, casts and math calls over them."""
    kind = node.type
    if kind in _LITERALS:
        return True
    if kind == "identifier":
        return _text(node, src) in MATH_CONSTANTS
    if kind == "call_expression":
        args = node.child_by_field_name("arguments")
        return (_called_name(node, src) or "") in CALLS and args is not None \
            and _constant(args, src)
    if kind == "cast_expression":
        value = node.child_by_field_name("value")
        return value is not None and _constant(value, src)
    if kind not in _CONST_WRAPPERS:
        return False
    parts = [c for c in node.named_children if c.type != "comment"]
    return bool(parts) and all(_constant(c, src) for c in parts)


def op_edits(body: Node, src: bytes) -> tuple[list[Wrap], list[Sub]]:
    """Insertions and operator replacements counting the executed operations of one function body.

    Args:
        body: The ``compound_statement`` of a ``__global__`` / ``__device__`` function.
        src: The parsed source.

    Returns:
        ``(start, end, prefix, suffix)`` insertions around nodes and ``(start, end, text)``
        replacements of operator tokens.
    """
    wraps: list[Wrap] = []
    subs: list[Sub] = []
    fused: set[int] = set()  # products already counted by their enclosing sum
    stack = [body]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in _SKIP or (kind in ("binary_expression", "call_expression")
                             and _constant(node, src)):
            continue
        if kind in ("preproc_if", "preproc_elif", "preproc_ifdef"):
            cond = node.child_by_field_name("condition")
            stack.extend(c for c in node.named_children if cond is None or c.id != cond.id)
            continue
        if kind == "declaration":
            for decl in node.children_by_field_name("declarator"):
                value = decl.child_by_field_name("value") if decl.type == "init_declarator" else None
                if value is not None:
                    stack.append(value)
            continue
        if kind == "binary_expression" and node.id not in fused:
            _binary(node, src, wraps, subs, fused)
        elif kind == "assignment_expression":
            _compound(node, src, wraps, subs, fused)
        elif kind == "update_expression":
            arg = node.child_by_field_name("argument")
            flat = _flat(arg, src) if arg is not None else None
            if flat is not None:
                wraps.append((node.start_byte, node.end_byte, f"(::sc::op_inc(SC_PT(({flat}))), ", ")"))
        elif kind == "call_expression":
            helper = CALLS.get(_called_name(node, src) or "")
            if helper is not None:
                wraps.append((node.start_byte, node.end_byte, f"::sc::{helper}(", ")"))
        stack.extend(node.named_children)
    return wraps, subs


def _binary(node: Node, src: bytes, wraps: list[Wrap], subs: list[Sub], fused: set[int]) -> None:
    op = _operator(node)
    if op is None or _text(op, src) not in BINARY or _misparsed_declaration(node) \
            or _maybe_cast(node, src):
        return
    name = _text(op, src)
    if name in ("+", "-"):
        for side in ("left", "right"):
            prod = node.child_by_field_name(side)
            if prod is not None and prod.id not in fused and _is_product(prod, src) \
                    and not _maybe_cast(prod, src) and not _constant(prod, src):
                inner = _operator(prod)
                assert inner is not None
                fused.add(prod.id)
                wraps.append((node.start_byte, node.end_byte, f"::sc::{_FUSED[side, name]}(", ")"))
                subs.append((op.start_byte, op.end_byte, ","))
                subs.append((inner.start_byte, inner.end_byte, ","))
                return
    wraps.append((node.start_byte, node.end_byte, f"::sc::{BINARY[name]}(", ")"))
    subs.append((op.start_byte, op.end_byte, ","))


def _compound(node: Node, src: bytes, wraps: list[Wrap], subs: list[Sub], fused: set[int]) -> None:
    op = _operator(node)
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if op is None or left is None or right is None or _text(op, src) not in COMPOUND \
            or right.type == "initializer_list":
        return
    name, flat = _text(op, src), _flat(left, src)
    if flat is None:
        return
    lhs = f"SC_PT(({flat}))"
    if name in ("+=", "-=") and _is_product(right, src) and not _maybe_cast(right, src) \
            and not _constant(right, src):
        inner = _operator(right)
        assert inner is not None
        fused.add(right.id)
        wraps.append((right.start_byte, right.end_byte, f"::sc::op_cfma({lhs}, ", ")"))
        subs.append((inner.start_byte, inner.end_byte, ","))
        return
    wraps.append((right.start_byte, right.end_byte, f"::sc::{COMPOUND[name]}({lhs}, ", ")"))
