# The reference of the skills' contract: reference(**kwargs) writes the output in place.
import torch

atol = 1e-3
rtol = 1e-3


def reference(A, B, C, **kwargs):
    C.copy_(A @ B)
