"""WRONG (output cached across calls): the first result is kept on a module-level object and a
copy of it is returned for every later input. The static checks look for containers, globals
and state on self, not attributes of an ordinary object; the run-time check sees trial 2
return trial 1's outputs."""
import torch.nn as nn


class _Box:
    out = None


_box = _Box()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        if _box.out is None:
            _box.out = a * b
        return _box.out + 0.0
