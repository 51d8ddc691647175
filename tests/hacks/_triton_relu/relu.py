# y = relu(x) in Triton: the honest kernel of the Python fixtures (tests/hacks/README.md); the
# cheats import it and add their trick.
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def run_kernel(x, y, n, **_):
    _relu[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
