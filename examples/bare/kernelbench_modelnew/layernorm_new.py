# An agent's answer to KernelBench level 1 problem 40_LayerNorm, as KernelBench takes answers:
# a ModelNew module (Triton here). kopt checks and times it as a kernel of its problem:
#   kopt optimize examples/bare/kernelbench_modelnew/layernorm_new.py \
#       --ref 40_LayerNorm.py   (KernelBench level 1's problem file)
# kopt imports the problem from the Model file into kopt-layernorm_new/ and runs ModelNew with
# Model's init inputs and weights (loaded by name: ln.weight, ln.bias).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_stats(x_ptr, mean_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(base + offs, mask=offs < N, other=0.0)
        acc += v
        acc2 += v * v
    mean = tl.sum(acc, 0) / N
    var = tl.sum(acc2, 0) / N - mean * mean
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(var + eps))


@triton.jit
def _normalize(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    base = row.to(tl.int64) * N
    v = tl.load(x_ptr + base + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    tl.store(y_ptr + base + offs, (v - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = self.ln.weight.numel()
        rows = x.numel() // n
        xf = x.contiguous().view(rows, n)
        y = torch.empty_like(xf)
        mean = torch.empty(rows, device=x.device, dtype=torch.float32)
        rstd = torch.empty(rows, device=x.device, dtype=torch.float32)
        _row_stats[(rows,)](xf, mean, rstd, n, self.ln.eps, BLOCK=4096, num_warps=16)
        _normalize[(rows, triton.cdiv(n, 4096))](xf, self.ln.weight, self.ln.bias, y, mean, rstd, n,
                                                 BLOCK=4096, num_warps=8)
        return y.view_as(x)
