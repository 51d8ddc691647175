# Written for kopt in KernelBench's problem format (Model, get_inputs, get_init_inputs);
# the sizes are kopt's choice.
import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs a ReLU activation.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4096
dim = 8192


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
