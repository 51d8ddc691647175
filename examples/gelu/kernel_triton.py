# tanh-approximate GELU in Triton: run_kernel(**tensors, **dims, **params) launches it.
import triton
import triton.language as tl


@triton.jit
def _gelu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask)
    inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
    t = 2.0 * tl.sigmoid(2.0 * inner) - 1.0  # tanh(inner)
    tl.store(y_ptr + offs, 0.5 * v * (1.0 + t), mask=mask)


def run_kernel(x, y, n, BLOCK, **_):
    _gelu[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
