"""The seeded inputs, drawn on the job's device with the bits of kopt's C++ (draw_tensor, the
twin of src/problem/draw_element.inc, which kopt compiles for the host and for its own CUDA
jobs' devices), a step at a time, and the check that a drawn input still holds them."""
import math
import os
import struct

from kopt_worker_state import _perf_counter, _spent, _torch_dtype, torch


# The twin of src/problem/draw_element.inc: element i of a tensor from its recipe (kind, a, b,
# key) and i alone, with one IEEE rounding per torch operation (no fused multiply-add), so the
# bytes are kopt's C++'s on a CPU and on a GPU. 64-bit words are int64 tensors: additions and
# multiplications wrap as uint64's do, and a logical shift is an arithmetic one masked.
_U64 = (1 << 64) - 1


def _s64(v):
    v &= _U64
    return v - (1 << 64) if v >> 63 else v


_MIX = (_s64(0x9e3779b97f4a7c15), _s64(0xbf58476d1ce4e5b9), _s64(0x94d049bb133111eb))
_LN2 = float.fromhex("0x1.62e42fefa39efp-1")
_SQRT_HALF = float.fromhex("0x1.6a09e667f3bcdp-1")
_TWO_PI = float.fromhex("0x1.921fb54442d18p+2")
_LOG_C = [1.0 / float(2 * k + 1) for k in range(13)]
_COS_C = [1.0]
for _k in range(1, 16):
    _COS_C.append(-_COS_C[-1] / float((2 * _k - 1) * (2 * _k)))
_INT_RANGE = {"i64": (-(1 << 63), (1 << 63) - 1), "i32": (-(1 << 31), (1 << 31) - 1),
              "i16": (-(1 << 15), (1 << 15) - 1), "i8": (-128, 127), "u8": (0, 255)}


# Elements per step, at most: a few temporaries of 128 MiB on the device (kopt's tests make it
# small). A tensor is drawn in at least 256 steps (draw_chunk), so that the temporaries stay
# near a tenth of its own size: 0.5 GiB of them beside a 0.3 GiB weight put a problem over its
# memory bound.
DRAW_CHUNK = int(os.environ.get("KOPT_TEST_DRAW_CHUNK") or (1 << 24))


def draw_chunk(n, most):
    return max(1, min(most, max(1 << 16, n >> 8)))


def five_percent_step(n, element_bytes, temp_bytes, most):
    """Elements of a step over a tensor of n elements whose temporaries (`temp_bytes` an element)
    stay near 5 % of the tensor's bytes: at least 1 M (a floor of 256 K changed no problem's
    memory by more than 0.03 GiB: perf.md §23), at most `most`. The draw's kernel, the summary
    and the device comparison each step so."""
    return max(1, min(most, max(1 << 20, n * element_bytes // (20 * temp_bytes))))


# On a CUDA device the values come from one kernel a step, whose temporaries are the step's
# indices and values (16-24 bytes an element, not the ~100 of the torch operations').
FUSED_TEMP_BYTES = 20


def _hex(v):
    return "__longlong_as_double(%dLL)" % _s64(struct.unpack("<q", struct.pack("<d", v))[0])


# The twin in CUDA: every multiply, add and division an intrinsic that rounds once (never a
# fused multiply-add, whatever the compiler's flags), the constants the bits of the Python
# ones. It returns the f64 value's bits as an int64 (jiterator computes in the indices' type).
def _fused_code():
    def horner(c, x):
        p = _hex(c[-1])
        for v in reversed(c[:-1]):
            p = "__dadd_rn(__dmul_rn(%s, %s), %s)" % (p, x, _hex(v))
        return p

    return """template <typename T> T kopt_draw(T index, long long key, long long kind, double a, double b) {
  unsigned long long i = (unsigned long long)index;
  unsigned long long k = (unsigned long long)key + 2ull * i;
  double v;
  if (kind == 3) return __double_as_longlong(__dadd_rn(__dmul_rn((double)index, b), a));
  if (kind == 4) return __double_as_longlong(a);
  unsigned long long x = k + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x = x ^ (x >> 31);
  double u = __dmul_rn((double)(x >> 11), %(unit)s);
  if (kind == 1) {
    v = __dadd_rn(__dmul_rn(u, b), a);
  } else if (kind == 2) {
    v = __dadd_rn(floor(__dmul_rn(u, b)), a);
  } else {
    double u1 = __dsub_rn(1.0, u);
    unsigned long long y = k + 1ull + 0x9e3779b97f4a7c15ull;
    y = (y ^ (y >> 30)) * 0xbf58476d1ce4e5b9ull;
    y = (y ^ (y >> 27)) * 0x94d049bb133111ebull;
    y = y ^ (y >> 31);
    double u2 = __dmul_rn((double)(y >> 11), %(unit)s);
    int e = 0;
    double m = frexp(u1, &e);
    double small = m < %(sqrt_half)s ? 1.0 : 0.0;
    if (small != 0.0) m = __dmul_rn(m, 2.0);
    double ef = __dsub_rn((double)e, small);
    double s = __ddiv_rn(__dsub_rn(m, 1.0), __dadd_rn(m, 1.0));
    double z = __dmul_rn(s, s);
    double lg = __dadd_rn(__dmul_rn(ef, %(ln2)s), __dmul_rn(__dmul_rn(s, 2.0), %(log)s));
    double t = __dmul_rn(__dsub_rn(u2, 0.5), %(two_pi)s);
    double y2 = __dmul_rn(t, t);
    double c = -(%(cos)s);
    v = __dadd_rn(__dmul_rn(__dmul_rn(__dsqrt_rn(__dmul_rn(lg, -2.0)), b), c), a);
  }
  return __double_as_longlong(v);
}""" % {"unit": _hex(2.0 ** -53), "sqrt_half": _hex(_SQRT_HALF), "ln2": _hex(_LN2),
        "two_pi": _hex(_TWO_PI), "log": horner(_LOG_C, "z"), "cos": horner(_COS_C, "y2")}


# Elements from which a tensor's draw compiles the kernel (about 0.8 s, once a process): from
# there the torch operations' steps cost as much a draw (0.1 s at 4 M elements on an H200).
# Once compiled (a batch's worker compiles it while kopt imports: the "warm" request), it draws
# every tensor.
FUSED_FROM = 1 << 22


_KINDS = {"normal": 0, "uniform": 1, "randint": 2, "arange": 3, "constant": 4}
_fused = {}  # "fn": the jitted function, or "failed": why it cannot be had here


def _fused_fn():
    """The jitted draw, made once a process; None where it cannot be (no CUDA, no NVRTC, an
    old torch), and then the torch operations draw."""
    if "fn" in _fused or "failed" in _fused:
        return _fused.get("fn")
    # Not through torch's kernel cache on disk: a file there that a candidate could write would
    # be the code that draws every later process's inputs. A compile a process (under a second).
    os.environ["USE_PYTORCH_KERNEL_CACHE"] = "0"
    t0 = _perf_counter()
    try:
        fn = torch.cuda.jiterator._create_jit_fn(_fused_code(), key=0, kind=0, a=0.0, b=0.0)
        probe = torch.arange(0, 3, dtype=torch.int64, device="cuda")
        fn(probe, key=1, kind=0, a=0.0, b=1.0)  # compiled now: a failure falls back here
        _fused["fn"] = fn
        _spent.append(("compiling the draw", _perf_counter() - t0))
    except Exception as e:  # noqa: BLE001 (any failure: the torch operations draw instead)
        _fused["failed"] = "%s: %s" % (type(e).__name__, e)
    return _fused.get("fn")


def _fused_args(recipe):
    """The kernel's arguments: _draw_values' constants, made as it makes them."""
    kind, a, b = recipe["kind"], float(recipe["a"]), float(recipe["b"])
    if kind == "uniform":
        b = b - a
    elif kind == "randint":
        a = float(math.ceil(a))
        b = float(math.ceil(b)) - a
    return {"key": _s64(int(recipe["key"])), "kind": _KINDS[kind], "a": a, "b": b}


def _lsr(x, k):
    return (x >> k) & ((1 << (64 - k)) - 1)


def _mix64(x):
    x = x + _MIX[0]
    x = (x ^ _lsr(x, 30)) * _MIX[1]
    x = (x ^ _lsr(x, 27)) * _MIX[2]
    return x ^ _lsr(x, 31)


def _unit(bits):
    return _lsr(bits, 11).to(torch.float64) * (2.0 ** -53)


def _horner(coefficients, x):
    p = torch.full_like(x, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        p = p * x + c
    return p


def _log(u):
    m, e = torch.frexp(u)
    small = m < _SQRT_HALF
    m = torch.where(small, m * 2.0, m)
    e = e.to(torch.float64) - small.to(torch.float64)
    s = (m - 1.0) / (m + 1.0)
    return e * _LN2 + (s * 2.0) * _horner(_LOG_C, s * s)


def _cos_2pi(t):
    x = (t - 0.5) * _TWO_PI
    return -_horner(_COS_C, x * x)


def _draw_values(recipe, i):
    """Element values (f64) at the int64 indices i."""
    kind, a, b = recipe["kind"], float(recipe["a"]), float(recipe["b"])
    key = _s64(int(recipe["key"]))
    if kind == "normal":
        u1 = 1.0 - _unit(_mix64(key + 2 * i))
        u2 = _unit(_mix64(key + 2 * i + 1))
        return (torch.sqrt(_log(u1) * -2.0) * b) * _cos_2pi(u2) + a
    if kind == "uniform":
        return _unit(_mix64(key + 2 * i)) * (b - a) + a
    if kind == "randint":
        lo = float(math.ceil(a))
        return torch.floor(_unit(_mix64(key + 2 * i)) * (float(math.ceil(b)) - lo)) + lo
    if kind == "arange":
        return i.to(torch.float64) * b + a
    if kind == "constant":
        return torch.full(i.shape, a, dtype=torch.float64, device=i.device)
    raise ValueError("unknown init kind %r" % kind)


def _stored(v, dtype):
    """v (f64) in `dtype`, as kopt's store_from_double stores it."""
    if dtype == "f64":
        return v
    if dtype in ("f32", "f16", "bf16"):
        v = v.to(torch.float32)
        return v if dtype == "f32" else v.to(_torch_dtype(dtype))
    lo, hi = _INT_RANGE[dtype]
    r = torch.round(v)  # to nearest, ties to even, as nearbyint
    under, over = ~(r >= float(lo)), r >= float(hi)
    out = torch.where(under | over, 0.0, r).to(_torch_dtype(dtype))
    out = torch.where(under, torch.full_like(out, lo), out)
    return torch.where(over, torch.full_like(out, hi), out)


def draw_tensor(recipe, dtype, shape, dev):
    t0 = _perf_counter()
    try:
        return _draw_tensor(recipe, dtype, shape, dev)
    finally:
        _spent.append(("drawing inputs", _perf_counter() - t0))


def _draw_tensor(recipe, dtype, shape, dev):
    n = 1
    for e in shape:
        n *= int(e)
    out = torch.empty(n, dtype=_torch_dtype(dtype), device=dev)
    for start, end, values in _steps(recipe, n, out.element_size(), out.device):
        out[start:end] = _stored(values, dtype)
    return out.view(tuple(shape))


def _steps(recipe, n, element_bytes, dev):
    """(start, end, f64 values) over the n elements, in steps whose temporaries stay near 5 %
    (one kernel a step) or a tenth (the torch operations) of the tensor's bytes."""
    fn = _fused_fn() if dev.type == "cuda" and (n >= FUSED_FROM or "fn" in _fused) else None
    args = _fused_args(recipe) if fn is not None and recipe["kind"] in _KINDS else None
    step = five_percent_step(n, element_bytes, FUSED_TEMP_BYTES, DRAW_CHUNK) if args else draw_chunk(n, DRAW_CHUNK)
    for start in range(0, n, step):
        end = min(n, start + step)
        i = torch.arange(start, end, dtype=torch.int64, device=dev)
        yield start, end, fn(i, **args).view(torch.float64) if args else _draw_values(recipe, i)


def drawn_unchanged(x, recipe, dtype):
    """Whether tensor x still holds what its recipe draws (compared chunk by chunk: no copy)."""
    flat = x.reshape(-1)
    for start, end, values in _steps(recipe, flat.numel(), flat.element_size(), flat.device):
        if not torch.equal(flat[start:end], _stored(values, dtype).to(flat.dtype)):
            return False
    return True
