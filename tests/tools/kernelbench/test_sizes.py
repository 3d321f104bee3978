"""Tuple size constants (``input_shape = (32768,)``): their elements scale like any size and
are written back into the problem's and the candidate's namespaces as tuples."""

from structcover.tools.kernelbench.problem import load_problem
from structcover.tools.kernelbench.sizes import apply_sizes, recompute_derived, tuple_elements

SCAN_PROBLEM = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)
batch_size = 32768
input_shape = (32768,)
dim = 1
def get_inputs():
    return [torch.rand(batch_size, *input_shape)]
def get_init_inputs():
    return [dim]
"""


def test_tuple_elements_are_sizes_and_shrink_with_the_rest(tmp_path):
    f = tmp_path / "90_cumprod.py"
    f.write_text(SCAN_PROBLEM)
    p = load_problem(f)
    assert p.sizes == {"batch_size": 32768, "input_shape__0": 32768, "dim": 1}
    assert p.input_shapes == [["batch_size", "input_shape__0"]]
    assert p.work() == 32768.0 ** 2
    # Before, the tuple stayed whole: 32768 x 32768 floats at any budget (4 GiB per input).
    shrunk = p.shrunk(65536)
    assert shrunk["batch_size"] * shrunk["input_shape__0"] <= 65536
    assert shrunk["input_shape__0"] < 32768 and shrunk["dim"] == 1


def test_a_whole_tuple_shape_argument_expands_too(tmp_path):
    f = tmp_path / "p.py"
    f.write_text("import torch\nclass Model(torch.nn.Module): pass\nshape = (64, 128)\n"
                 "def get_inputs():\n    return [torch.randn(shape)]\n")
    p = load_problem(f)
    assert p.input_shapes == [["shape__0", "shape__1"]]
    assert tuple_elements("shape", p.sizes) == ["shape__0", "shape__1"]
    assert tuple_elements("missing", p.sizes) == []


def test_apply_rebuilds_tuples_and_leaves_other_names_alone():
    problem = {"batch_size": 32768, "input_shape": (32768, 7), "dim": 1}
    sizes = {"batch_size": 256, "input_shape__0": 256, "input_shape__1": 7, "dim": 1}
    apply_sizes(problem, sizes)
    assert problem == {"batch_size": 256, "input_shape": (256, 7), "dim": 1}
    # A candidate's copies: only names it binds itself, with the kind they have.
    candidate = {"batch_size": 32768, "input_shape": (32768, 7), "dim": "not a size"}
    apply_sizes(candidate, sizes, only_existing=True)
    assert candidate == {"batch_size": 256, "input_shape": (256, 7), "dim": "not a size"}
    empty: dict = {}
    apply_sizes(empty, sizes, only_existing=True)
    assert empty == {}


def test_shapes_derived_from_sizes_follow_the_shrunk_sizes():
    # A level-2 problem's bias follows its channel count; a scale derived from the bias shape
    # follows in turn (file order). The sizes themselves and unrelated constants stay as set.
    source = ("out_channels = 64\nkernel_size = 3\nbias_shape = (out_channels, 1, 1)\n"
              "numel = bias_shape[0] * 2\nscaling = 0.5\n")
    namespace: dict = {}
    exec(source, namespace)
    sizes = {"out_channels": 16, "kernel_size": 3}
    apply_sizes(namespace, sizes)
    assert namespace["bias_shape"] == (64, 1, 1)  # computed at import with the full size
    redone = recompute_derived(namespace, source, sizes)
    assert namespace["bias_shape"] == (16, 1, 1)
    assert namespace["numel"] == 32
    assert (namespace["out_channels"], namespace["scaling"]) == (16, 0.5)
    assert redone == ["bias_shape", "numel"]


def test_a_size_is_never_set_back_by_its_own_statement():
    # `height = width = 64` binds two sizes: re-running it would undo the shrunk values.
    source = "height = width = 64\ndepth = 8\nshape = (depth, height, width)\n"
    namespace: dict = {}
    exec(source, namespace)
    sizes = {"height": 16, "width": 16, "depth": 8}
    apply_sizes(namespace, sizes)
    recompute_derived(namespace, source, sizes)
    assert (namespace["height"], namespace["width"], namespace["shape"]) == (16, 16, (8, 16, 16))


MLP_PROBLEM = """
import torch
class Model(torch.nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        widths = [input_size, *layer_sizes, output_size]
        self.net = torch.nn.Sequential(*[torch.nn.Linear(a, b) for a, b in zip(widths, widths[1:])])
    def forward(self, x):
        return self.net(x)
batch_size = 128
input_size = 16384
layer_sizes = [16384, 16384]
output_size = 8192
def get_inputs():
    return [torch.rand(batch_size, input_size)]
def get_init_inputs():
    return [input_size, layer_sizes, output_size]
"""


def test_list_elements_are_sizes_and_shrink_with_the_rest(tmp_path):
    # The MLP problems pass their hidden widths as a list of constructor arguments: left
    # whole, a shrunk problem kept 16384 x 16384 weights per layer.
    f = tmp_path / "1_MLP.py"
    f.write_text(MLP_PROBLEM)
    p = load_problem(f)
    assert tuple_elements("layer_sizes", p.sizes) == ["layer_sizes__0", "layer_sizes__1"]
    shrunk = p.shrunk(65536)
    assert shrunk["batch_size"] * shrunk["input_size"] <= 65536
    # One factor for every size: the hidden widths shrink as far as the input width does.
    assert shrunk["layer_sizes__0"] == shrunk["layer_sizes__1"] == shrunk["input_size"] < 16384
    assert shrunk["output_size"] < 8192


def test_apply_rebuilds_lists_as_new_lists():
    shared = [16384, 16384]
    problem = {"layer_sizes": shared, "input_size": 16384}
    apply_sizes(problem, {"layer_sizes__0": 512, "layer_sizes__1": 512, "input_size": 512})
    assert problem == {"layer_sizes": [512, 512], "input_size": 512}
    assert isinstance(problem["layer_sizes"], list) and shared == [16384, 16384]
    candidate = {"layer_sizes": [16384, 16384]}
    apply_sizes(candidate, {"layer_sizes__1": 512, "input_size": 512}, only_existing=True)
    assert candidate == {"layer_sizes": [16384, 512]}
