import torch

atol = 1e-5
rtol = 1e-5


def reference(x, y, **kwargs):
    y.copy_(torch.softmax(x.double(), dim=-1).to(y.dtype))
