"""Splicing edited CUDA back into a KernelBench candidate (tools/kernelbench/embed.py)."""

from __future__ import annotations

import ast
import difflib
import random

import pytest

from structcover.tools.kernelbench.candidate import find_inline_extensions
from structcover.tools.kernelbench.embed import EmbedError, embedded_sources, replace_source

KERNEL = """
#include <torch/extension.h>

__global__ void scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

torch::Tensor scale(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

HEADER = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
'''
FOOTER = '''

class ModelNew(nn.Module):
    def forward(self, x):
        return ext.scale(x)
'''
CALL = ('ext = load_inline(name="scale_ext", cpp_sources="torch::Tensor scale(torch::Tensor x);",'
        ' cuda_sources={arg}, functions=["scale"])\n')


def _triple(prefix: str, quote: str) -> str:
    body = KERNEL if "r" not in prefix else KERNEL.replace("\\", "")
    return HEADER + f"cuda_src = {prefix}{quote}{body}{quote}\n" + CALL.format(arg="cuda_src") \
        + FOOTER


def _escaped(text: str) -> str:
    """``text`` as a one-line double-quoted literal body."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


STYLES = {
    "triple": _triple("", '"""'),
    "triple_single_quotes": _triple("", "'''"),
    "raw_triple": _triple("r", '"""'),
    "f_no_placeholders": _triple("f", '"""').replace("{", "{{").replace("}", "}}").replace(
        "cuda_sources={{arg}}", "cuda_sources={arg}"),
    "one_line_escapes": HEADER + f'cuda_src = "{_escaped(KERNEL)}"\n'
    + CALL.format(arg="cuda_src") + FOOTER,
    "implicit_concat": HEADER + "cuda_src = (\n" + "".join(
        f"    {line!r}\n" for line in KERNEL.splitlines(keepends=True)) + ")\n"
    + CALL.format(arg="cuda_src") + FOOTER,
    "names_added_in_a_list": HEADER + 'inc = "#include <torch/extension.h>\\n"\n'
    + f'body = """{KERNEL.split("#include <torch/extension.h>", 1)[1]}"""\n'
    + CALL.format(arg="[inc + body]") + FOOTER,
}


def _changed_lines(old: str, new: str) -> list[str]:
    return [ln for ln in difflib.ndiff(old.splitlines(), new.splitlines())
            if ln.startswith(("- ", "+ "))]


@pytest.mark.parametrize("style", sorted(STYLES))
def test_an_edited_line_goes_back_into_its_own_literal(style: str) -> None:
    text = STYLES[style]
    src = embedded_sources(text)[0]
    assert src.name == "scale_ext"
    assert src.text == find_inline_extensions(text)[0].cuda_sources[0]
    new = src.text.replace("256>>>", "128>>>").replace("2.0f * x[i]", "x[i] + x[i]")
    out = replace_source(text, src, new)
    assert find_inline_extensions(out)[0].cuda_sources[0] == new
    # ModelNew, the imports and the other arguments are untouched byte for byte.
    assert out.startswith(HEADER) and out.endswith(FOOTER)
    assert 'functions=["scale"]' in out and 'cpp_sources="torch::Tensor scale' in out
    # Only what changed differs (a one-line literal holds the whole kernel on one line).
    changed = _changed_lines(text, out)
    assert len(changed) == (2 if style in ("one_line_escapes",) else 4), changed


def test_raw_and_quote_style_are_kept() -> None:
    text = STYLES["raw_triple"]
    src = embedded_sources(text)[0]
    lit = src.literals[0]
    assert (lit.prefix, lit.quote) == ("r", '"""')
    out = replace_source(text, src, src.text.replace("int n)", "int n /* \\n raw */)"))
    assert 'cuda_src = r"""' in out and "/* \\n raw */" in out  # written as is, not escaped


def test_quotes_and_backslashes_are_escaped_in_a_plain_literal() -> None:
    text = STYLES["triple"]
    src = embedded_sources(text)[0]
    evil = src.text.replace("return y;", 'printf("%d\\n\\"\\"\\"", n); return y; // """\\')
    out = replace_source(text, src, evil)
    assert find_inline_extensions(out)[0].cuda_sources[0] == evil
    ast.parse(out)


def test_an_edit_a_raw_literal_cannot_spell_is_refused() -> None:
    text = STYLES["raw_triple"]
    src = embedded_sources(text)[0]
    with pytest.raises(EmbedError, match="raw"):
        replace_source(text, src, src.text.replace("return y;", 'return y; // """'))


def test_an_f_string_with_placeholders_is_not_embeddable() -> None:
    text = HEADER + 'N = 4\ncuda_src = f"__global__ void k(float* x) {{ x[{N}] = 0; }}"\n' \
        + CALL.format(arg="cuda_src") + FOOTER
    with pytest.raises(EmbedError, match="f-string"):
        embedded_sources(text)
    # Asked again (the planner asks once per operator), the answer is the same refusal.
    with pytest.raises(EmbedError, match="f-string"):
        embedded_sources(text)


def test_a_callers_changes_to_the_list_do_not_reach_the_next_caller() -> None:
    text = HEADER + 'cuda_src = "__global__ void k(float* x) { x[0] = 0; }"\n' \
        + CALL.format(arg="cuda_src") + FOOTER
    first = embedded_sources(text)
    assert len(first) == 1
    first.clear()  # callers filter and reorder the list they get
    assert [s.text for s in embedded_sources(text)] == ["__global__ void k(float* x) { x[0] = 0; }"]


def test_a_literal_shared_by_two_extensions_changes_in_both() -> None:
    text = HEADER + f'cuda_src = """{KERNEL}"""\n' + CALL.format(arg="cuda_src") \
        + CALL.format(arg="cuda_src").replace("ext =", "ext2 =").replace("scale_ext", "second")
    first = embedded_sources(text)[0]
    new = first.text.replace("256>>>", "64>>>")
    out = replace_source(text, first, new)
    assert [e.cuda_sources[0] for e in find_inline_extensions(out)] == [new, new]


def test_random_edits_round_trip_in_every_style() -> None:
    """Adversarial edits: random lines of quotes, backslashes, braces and control characters
    either go back exactly or (raw literals only) are refused; never a silently wrong file."""
    rng = random.Random(17)
    alphabet = ['"', "'", "\\", "{", "}", "\t", "x", " ", "\\n", '"""', "'''", "\r", "é", "\x07"]
    refused = 0
    for style, text in sorted(STYLES.items()):
        src = embedded_sources(text)[0]
        for _ in range(25):
            lines = src.text.splitlines(keepends=True)
            k = rng.randrange(len(lines))
            junk = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
            lines.insert(k, junk + "\n") if rng.random() < 0.5 else lines.__setitem__(
                k, junk + lines[k])
            new = "".join(lines)
            try:
                out = replace_source(text, src, new)
            except EmbedError:
                assert "r" in src.literals[0].prefix, (style, new)
                refused += 1
                continue
            assert find_inline_extensions(out)[0].cuda_sources[0] == new, style
            assert out.endswith(FOOTER)
    assert refused < 25  # raw literals still take most edits


@pytest.mark.parametrize("prefix", ["", "f"])
@pytest.mark.parametrize("quote", ['"""', "'''", '"', "'"])
def test_every_spelled_chunk_reads_back_as_itself(prefix: str, quote: str) -> None:
    """Plain code lines take a shortcut past the per-character escaping; both ways, a chunk
    spelled for a literal must read back as the chunk (mostly plain chunks, some special)."""
    from structcover.tools.kernelbench.embed import _spell
    from structcover.tools.kernelbench.literals import Literal

    rng = random.Random(5)
    plain = ["x", " ", "{", "}", "\t", "(", ";", "é", "\n"]
    special = ['"', "'", "\\", "\r", "\x07"]
    lit = Literal(start=0, end=0, prefix=prefix, quote=quote, spans=())
    for _ in range(300):
        alphabet = plain + (special if rng.random() < 0.3 else [])
        chunk = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        if len(quote) == 1:
            chunk = chunk.replace("\n", "") + ("\n" if rng.random() < 0.2 else "")
        for escape_all in (False, True):
            spelled = _spell(chunk, lit, escape_all)
            node = ast.parse(f"{prefix}{quote}{spelled}{quote}", mode="eval").body
            value = "".join(v.value for v in node.values) if isinstance(node, ast.JoinedStr) \
                else node.value
            assert value == chunk, (prefix, quote, chunk, spelled)
