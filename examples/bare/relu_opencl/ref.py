import torch


def reference(x, y, **kwargs):
    y.copy_(torch.relu(x))
