# Written for kopt in KernelBench's problem format (Model, get_inputs, get_init_inputs);
# the sizes are kopt's choice.
import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs Layer Normalization over the last three dimensions.
    """

    def __init__(self, normalized_shape: tuple):
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 16
features = 64
dim1 = 128
dim2 = 128


def get_inputs():
    x = torch.randn(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [(features, dim1, dim2)]
