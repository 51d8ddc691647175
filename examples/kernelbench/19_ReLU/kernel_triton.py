# ReLU in Triton: run_kernel(**tensors, **dims, **params) launches it over every element.
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(v, 0.0), mask=mask)


def run_kernel(x, out, batch_size, dim, BLOCK, **_):
    n = batch_size * dim
    _relu[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
