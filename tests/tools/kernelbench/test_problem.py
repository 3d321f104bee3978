"""Problem files: parsing, resolving by path or id, shrinking to a work budget."""

from pathlib import Path

import pytest

from structcover.tools.kernelbench.problem import load_problem, resolve_problem

DATA = Path(__file__).parents[2] / "data" / "kernelbench" / "problems"


def test_sizes_and_tolerance_come_from_module_constants(tmp_path):
    p = load_problem(DATA / "7_layernorm.py", DATA)
    assert p.id == "7_layernorm"
    assert p.sizes == {"batch_size": 16, "dim": 300}  # eps is a float, not a size
    assert (p.atol, p.rtol) == (1e-2, 1e-2)
    f = tmp_path / "p.py"
    f.write_text("class Model: pass\ndef get_inputs(): return []\nN = 7\nATOL = 0.001\n")
    q = load_problem(f)
    assert (q.atol, q.sizes, q.has_init_inputs) == (0.001, {"N": 7}, False)


def test_min_precision_is_read_and_checked(tmp_path):
    assert load_problem(DATA / "5_matmul.py").min_precision is None
    f = tmp_path / "p.py"
    f.write_text("class Model: pass\ndef get_inputs(): return []\nMIN_PRECISION = 'float16'\n")
    assert load_problem(f).min_precision == "float16"
    f.write_text("class Model: pass\ndef get_inputs(): return []\nMIN_PRECISION = 'half'\n")
    with pytest.raises(ValueError, match=r"p\.py: MIN_PRECISION must be one of .*got 'half'"):
        load_problem(f)


@pytest.mark.parametrize("name", ["5", "5_matmul", "5_matmul.py", "kb/5", "kb/5_matmul"])
def test_resolve_by_id_path_stem_or_number(tmp_path, name):
    (tmp_path / "kb").mkdir()
    for f in DATA.glob("*.py"):
        (tmp_path / "kb" / f.name).write_text(f.read_text())
    p = resolve_problem(name, tmp_path)
    assert p.path.name == "5_matmul.py"
    assert p.id == "kb/5_matmul"


def test_resolve_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="no file in"):
        resolve_problem("99", DATA)
    with pytest.raises(ValueError, match="pass --problems"):
        resolve_problem("5", None)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / "5_x.py").write_text((DATA / "5_matmul.py").read_text())
    with pytest.raises(ValueError, match="ambiguous"):
        resolve_problem("5", tmp_path)
    bad = tmp_path / "bad.py"
    bad.write_text("def get_inputs(): return []\n")
    with pytest.raises(ValueError, match="defines no Model"):
        load_problem(bad)


def test_shrink_scales_large_sizes_to_the_budget_and_keeps_small_ones(tmp_path):
    p = load_problem(DATA / "6_matmul_large.py")
    assert p.input_shapes == [["N", "N"], ["N", "N"]]
    assert p.work() == 2 * 1024 * 1024
    assert p.shrunk(2.0 ** 21) == {"N": 1024}
    small = p.shrunk(2.0 ** 16)
    # 2 * 181^2 = 65522 fits, but 1024 is a multiple of 32 and so is every shrunk N: 160.
    assert small["N"] == 160
    f = tmp_path / "conv.py"
    f.write_text("import torch\nclass Model: pass\n"
                 "def get_inputs(): return [torch.randn(batch, channels, width, width + 2)]\n"
                 "batch = 64\nchannels = 3\nkernel = 3\nwidth = 512\n")
    assert load_problem(f).input_shapes == [["batch", "channels", "width", "width + 2"]]
    q = load_problem(f).shrunk(1e4)
    assert q["channels"] == 3 and q["kernel"] == 3  # shapes of the computation stay
    assert q["batch"] < 64 and q["width"] < 512


def test_task_spec_of_kind_kernelbench():
    spec = load_problem(DATA / "5_matmul.py").task_spec()
    assert spec.kind == "kernelbench" and spec.problem.endswith("5_matmul.py")
    assert spec.args == [] and spec.sizes == {"M": 70, "K": 45, "N": 83}


def test_shrink_keeps_the_divisibility_the_problem_guarantees(tmp_path):
    f = tmp_path / "mv.py"
    f.write_text("import torch\nclass Model: pass\nM = 256\nK = 131072\nODD = 1000\n"
                 "def get_inputs(): return [torch.randn(M, K), torch.randn(K, 1), torch.randn(ODD)]\n")
    p = load_problem(f)
    small = p.shrunk(2.0 ** 16)
    # A float4 row walk or 32-wide tiles that need no tail at K = 131072 need none here either;
    # 1000 = 8 * 125 keeps its factor 8 and no more.
    assert small["K"] % 32 == 0 and small["M"] % 32 == 0 and small["ODD"] % 8 == 0
    assert p.work(small) <= 2.0 ** 16
    four = tmp_path / "four.py"
    four.write_text("import torch\nclass Model: pass\nB = 64\nC = 64\nH = 512\nW = 512\n"
                    "def get_inputs(): return [torch.randn(B, C, H, W)]\n")
    # Four dimensions at 32 each would be 16 times the budget: the alignment drops to 16.
    q = load_problem(four)
    assert q.shrunk(2.0 ** 16) == {"B": 16, "C": 16, "H": 16, "W": 16}


def test_chained_and_unpacked_sizes_are_each_a_size(tmp_path):
    # Level-2 problems write their sizes these ways; each name must scale when the problem
    # shrinks, or the reference runs at its full spatial size.
    f = tmp_path / "p.py"
    f.write_text("import torch\nclass Model: pass\nbatch_size = 128\n"
                 "height = width = 256\ndepth, channels = 64, 32\nkernel = 3; groups = 8\n"
                 "def get_inputs():\n"
                 "    return [torch.randn(batch_size, channels, depth, height, width)]\n")
    p = load_problem(f)
    assert p.sizes == {"batch_size": 128, "height": 256, "width": 256, "depth": 64,
                       "channels": 32, "kernel": 3, "groups": 8}
    assert p.input_shapes == [["batch_size", "channels", "depth", "height", "width"]]
    small = p.shrunk(2**16)
    assert all(small[k] < p.sizes[k] for k in ("height", "width", "depth"))
    assert small["kernel"] == 3  # shapes of the computation stay


def test_products_of_literals_are_sizes(tmp_path):
    # KernelBench's newer problems scale their sizes as `N = 2048 * 2`: read as no size, the
    # problem was never shrunk and its reference ran at full size on the CPU path.
    f = tmp_path / "p.py"
    f.write_text("import torch\nclass Model: pass\nM = 1024 * 2\nK = 4096 * 2 + 0\n"
                 "input_shape = (4096 * 4,)\nshift = 1 << 10\nscale = M * 2\neps = 1e-5 * 2\n"
                 "def get_inputs():\n    return [torch.rand(M, K)]\n")
    p = load_problem(f)
    # `scale` is derived from a size (recomputed after a shrink), `eps` a float: neither is one.
    assert p.sizes == {"M": 2048, "K": 8192, "input_shape__0": 16384, "shift": 1024}
    small = p.shrunk(2**16)
    assert small["M"] < 2048 and small["K"] < 8192
