# The PyTorch reference: writes y in place, computed in f64. tanh-approximate GELU, as the
# kernels compute it. baseline() is what `kopt bench --vs-torch` times: GELU in f32, as a
# PyTorch user would write it.
import torch

atol = 1e-5
rtol = 1e-5


def reference(x, y, n):
    y.copy_(torch.nn.functional.gelu(x.double(), approximate="tanh").to(y.dtype))


def baseline(x, **_):
    return torch.nn.functional.gelu(x, approximate="tanh")
