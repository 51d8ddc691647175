# Row softmax in Triton under the skills' contract: setup(**dims) says the tensors (kopt draws
# its own inputs like these), run_kernel(**kwargs) launches the kernel. No kopt.toml: run
#   kopt optimize examples/bare/softmax_triton/softmax.py --dims M=4096,N=4096
# and kopt names every extent by running setup() at the dims and at small dims.
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, 0)
    e = tl.exp(x)
    tl.store(y_ptr + row * N + offs, e / tl.sum(e, 0), mask=mask)


def setup(M=4096, N=4096, **kwargs):
    x = torch.randn(M, N, device="cuda")
    y = torch.empty(M, N, device="cuda")
    return {"inputs": {"x": x, "y": y, "M": M, "N": N}, "outputs": ["y"]}


def run_kernel(x, y, M, N, num_warps=8, **kwargs):
    _softmax[(M,)](x, y, N, BLOCK=triton.next_power_of_2(N), num_warps=num_warps)
