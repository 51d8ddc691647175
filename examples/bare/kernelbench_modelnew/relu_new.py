# An agent's answer to KernelBench level 1 problem 19_ReLU with CUDA through load_inline, the
# most common form of KernelBench answers. kopt checks and times it as a kernel of its problem:
#   kopt check examples/bare/kernelbench_modelnew/relu_new.py --ref 19_ReLU.py   (KernelBench level 1's problem file)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_source = r"""
#include <torch/extension.h>
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
torch::Tensor relu_cuda(torch::Tensor x) {
  auto y = torch::empty_like(x);
  long n = x.numel();
  relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""

_ext = load_inline(name="kopt_example_relu", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                   cuda_sources=_source, functions=["relu_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu_cuda(x.contiguous())
