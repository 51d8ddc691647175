# Written for kopt in KernelBench's problem format (Model, get_inputs, get_init_inputs);
# the sizes are kopt's choice.
import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that sums over one dimension, keeping it.
    """

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 16
dim1 = 2048
dim2 = 2047
reduce_dim = 1


def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
