import torch


def reference(x, y, n):
    y.copy_(torch.relu(x))
