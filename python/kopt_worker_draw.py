"""The seeded inputs, drawn on the job's device with the bits of kopt's C++ (draw_tensor, the
twin of src/problem/tensor_draw.cpp), a step at a time, and the check that a drawn input still
holds them."""
import math
import os

from kopt_worker_state import _perf_counter, _spent, _torch_dtype, torch


# The twin of src/problem/tensor_draw.cpp: element i of a tensor from its recipe (kind, a, b,
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
    step = draw_chunk(n, DRAW_CHUNK)
    for start in range(0, n, step):
        end = min(n, start + step)
        out[start:end] = _stored(_draw_values(recipe, torch.arange(start, end, dtype=torch.int64, device=dev)), dtype)
    return out.view(tuple(shape))


def drawn_unchanged(x, recipe, dtype):
    """Whether tensor x still holds what its recipe draws (compared chunk by chunk: no copy)."""
    flat = x.reshape(-1)
    step = draw_chunk(flat.numel(), DRAW_CHUNK)
    for start in range(0, flat.numel(), step):
        end = min(flat.numel(), start + step)
        want = _stored(_draw_values(recipe, torch.arange(start, end, dtype=torch.int64, device=x.device)), dtype)
        if not torch.equal(flat[start:end], want.to(flat.dtype)):
            return False
    return True
