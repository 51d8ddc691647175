"""kopt's Python worker: PyTorch references (ref.py), Triton kernels and PyTorch baselines.

Started by kopt's worker process (which owns the device for CUDA kernels) and driven over
stdin/stdout, one JSON object a line. Inputs come as recipes, drawn here on the job's device
with the same bits as kopt's C++ (draw_tensor, the twin of src/problem/tensor_draw.cpp), or as
raw files; outputs go back as raw files of the tensor's dtype (ndarray.tofile).
Timing decisions stay in kopt: this side takes one sample when asked (a flush of the L2;
with "hold", a spin on the GPU that keeps the host's Python out of the window; then device
events around one call) and returns its device and host seconds.

Ops: hello; run {job}; prepare {id, job}; sample {id, flush_bytes, hold}; release {id}.
For torch.compile jobs, prepare and sample also report dynamo's counters (graphs compiled,
graph breaks), so kopt can say that a noisy baseline recompiled while it was timed.
A job: kind (python_reference | triton | torch_eager | torch_compile), module (a .py file;
the torch kinds time its setup_baseline() or baseline() where it has one, else reference()),
entry, tensors [{name, dtype, shape, role, draw, input_path, output_path}], scalars {name: value}.
"""
import errno
import hashlib
import importlib.machinery
import importlib.util
import inspect
import json
import math
import os
import sys
import time
import traceback

_protocol_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)  # print() from user code lands in the log, never in the protocol stream
# kopt's clocks, taken before any user module is imported: a candidate that rewrites
# time.perf_counter or json.dumps changes what its own code sees, never what kopt reads.
_perf_counter = time.perf_counter
_json_dumps = json.dumps

try:
    import numpy as np
except Exception as e:  # noqa: BLE001
    np = None
    _numpy_error = str(e)
try:
    import torch
except Exception as e:  # noqa: BLE001
    torch = None
    _torch_error = str(e)


def use_expandable_segments():
    """kopt's trusted process maps its device memory as its tensors grow (torch's expandable
    segments) instead of caching whole blocks: GBs cached in blocks a slightly different request
    could not reuse made a KernelBench problem of 8 GiB hold 12 (9_Tall_skinny, H100). Not in a
    candidate's process (CUDA IPC cannot share such memory), not where the user set
    PYTORCH_CUDA_ALLOC_CONF, and not in a torch without the setting (before 2.1)."""
    if torch is None or os.environ.get("KOPT_PYTHON_ROLE") != "trusted" or os.environ.get("PYTORCH_CUDA_ALLOC_CONF"):
        return
    try:
        torch.cuda.memory._set_allocator_settings("expandable_segments:True")
    except Exception:  # noqa: BLE001 (an older or a CPU-only torch)
        pass


use_expandable_segments()

class Tampered(Exception):
    """A candidate changed something kopt measures with: its numbers are not a result, and this
    process is not trusted with another candidate (the worker exits after saying so)."""


class _TorchClock:
    """CUDA events and device synchronisation through torch's C types, which Python code cannot
    rewrite: torch.cuda.Event's Python methods (elapsed_time, record, ...) are a candidate's to
    patch, _CudaEventBase's are not. Taken before any user module is imported."""

    def __init__(self):
        self.base = torch._C._CudaEventBase
        self.record_on = self.base.record
        self.elapsed = self.base.elapsed_time
        self.wait_done = self.base.synchronize
        self.device_sync = torch._C._cuda_synchronize
        self.sleep = getattr(torch._C, "_cuda_sleep", None)
        self.stream = None

    def event(self):
        return self.base.__new__(self.base, enable_timing=True)

    def record(self, ev):
        if self.stream is None:  # the device's default stream, whatever a candidate made current
            self.stream = torch.cuda.default_stream()
        self.record_on(ev, self.stream)


_torch_clock = None


def torch_clock():
    global _torch_clock
    if _torch_clock is None:
        _torch_clock = _TorchClock()
    return _torch_clock


def _watched():
    """What a candidate could rewrite to change kopt's numbers, by name: the clocks, the torch
    events and streams, triton's own timers, the JSON kopt replies with, and this worker's code."""
    out = {}
    for name in ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns",
                 "process_time", "sleep"):
        out["time." + name] = getattr(time, name, None)
    out["json.dumps"] = json.dumps
    out["json._default_encoder"] = getattr(json, "_default_encoder", None)
    if torch is not None:
        out["torch.cuda.Event"] = torch.cuda.Event
        for k, v in vars(torch.cuda.Event).items():
            out["torch.cuda.Event." + k] = v
        for name in ("synchronize", "current_stream", "default_stream", "set_stream", "Stream", "stream",
                     "_sleep", "elapsed_time"):
            if hasattr(torch.cuda, name):
                out["torch.cuda." + name] = getattr(torch.cuda, name)
    testing = sys.modules.get("triton.testing")
    if testing is not None:
        for name in ("do_bench", "do_bench_cudagraph"):
            if hasattr(testing, name):
                out["triton.testing." + name] = getattr(testing, name)
    worker = sys.modules.get(__name__)
    out["kopt worker _protocol_out"] = getattr(worker, "_protocol_out", None)
    for k, v in vars(worker).items():
        if callable(v):  # its functions and classes, whoever replaced them
            out["kopt worker " + k] = v
            if isinstance(v, type):
                for m, f in vars(v).items():
                    out["kopt worker %s.%s" % (k, m)] = f
    return out


_seen = {}


def watch():
    """Adds what is not watched yet (triton.testing once kopt imports it) to the snapshot."""
    for k, v in _watched().items():
        _seen.setdefault(k, v)


def check_untouched(when):
    """Raises Tampered naming what a candidate's code replaced or added since kopt looked."""
    now = _watched()
    changed = sorted(k for k, v in _seen.items() if k in now and now[k] is not v)
    changed += sorted(k for k in now if k not in _seen and k.startswith(("torch.cuda.Event.", "kopt worker")))
    if changed:
        raise Tampered("the candidate replaced %s %s: kopt times with its own copies, and a candidate that "
                       "rewrites a timer is refused (its numbers are not a result)" % (", ".join(changed[:8]), when))


NUMPY_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "i64": "int64", "i32": "int32",
                "i16": "int16", "i8": "int8", "u8": "uint8"}
_modules = {}
_prepared = {}
_shared = {}  # the tensors the baselines of the bench being prepared share (Call.made)
_spent = []  # (what, seconds) of the request being handled: the log says where its time went
_kept = {}  # key -> {output name: tensor}: a reference's outputs kept on its device (Call.keep)
_held = None  # the Call whose outputs a candidate shared (Call.share_outputs): alive until the next request
_dropped_for_room = False  # a reference's run let the kept references go (call_with_room)
_memory = {}  # what this process's device memory reached since kopt last asked (note_memory, op "memory")


def _torch_dtype(name):
    return getattr(torch, "bfloat16" if name == "bf16" else NUMPY_DTYPES[name])
_flush = None


def device():
    want = os.environ.get("KOPT_PYTHON_DEVICE", "")
    if want:
        return want
    return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"


def device_uuid(dev):
    """The UUID of the GPU a job ran on ("8932f937-..."), for kopt to check it is its own
    device; empty off CUDA or where torch does not say."""
    if not dev.startswith("cuda"):
        return ""
    try:
        return str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
    except Exception:  # noqa: BLE001
        return ""


def is_candidate(job):
    """A kernel under test (its code is not kopt's nor the problem's): watched for tampering."""
    return job["kind"] == "triton"


def load_module(path, candidate=False):
    key = (path, os.path.getmtime(path))
    if key not in _modules:
        if candidate:
            try:  # triton's own timers, watched from before the candidate can reach them
                import triton.testing  # noqa: F401
            except Exception:  # noqa: BLE001
                pass
            watch()
        name = "kopt_user_" + hashlib.sha256(path.encode()).hexdigest()[:12]
        # Any file name (a build cache's too): the source loader does not care for the suffix.
        spec = importlib.util.spec_from_loader(name, importlib.machinery.SourceFileLoader(name, path))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # torch.compile (dynamo) looks modules up by name
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        try:
            spec.loader.exec_module(mod)
        finally:
            sys.path.pop(0)
        _modules[key] = mod
        if candidate:
            check_untouched("when its module was imported")
    return _modules[key]


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


def to_torch(t, dev):
    shape = tuple(t["shape"])
    if t.get("draw"):
        return draw_tensor(t["draw"], t["dtype"], shape, dev)
    if t["dtype"] == "bf16":
        raw = np.fromfile(t["input_path"], dtype=np.int16).reshape(shape)
        return torch.from_numpy(raw).view(torch.bfloat16).to(dev)
    return torch.from_numpy(np.fromfile(t["input_path"], dtype=NUMPY_DTYPES[t["dtype"]]).reshape(shape)).to(dev)


def poisoned(t, dev):
    shape = tuple(t["shape"])
    if t["dtype"] in ("f32", "f64", "f16", "bf16"):
        dt = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}[t["dtype"]]
        return torch.full(shape, float("nan"), dtype=dt, device=dev)
    dt = getattr(torch, NUMPY_DTYPES[t["dtype"]])
    return torch.full(shape, -0x5A5A5A5B if t["dtype"] in ("i32", "i64") else 0x5A, dtype=dt, device=dev)


# Errors of a write the machine refused (no room, a file-size or quota limit, a read-only or
# failing disk): kopt's environment, never the job's verdict.
_MACHINE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO}


def write_tensor(x, path):
    t0 = _perf_counter()
    try:
        _write_tensor(x, path)
    except OSError as e:
        if e.errno in _MACHINE_ERRNOS:
            raise KoptEnvironment("kopt could not write %s: %s" % (path, e)) from e
        raise
    finally:
        _spent.append(("writing %s" % os.path.basename(path), _perf_counter() - t0))


_staging = None  # pinned host memory a tensor on the GPU is copied through, chunk by chunk
STAGING_BYTES = 1 << 28


def _write_tensor(x, path):
    global _staging
    x = x.detach().contiguous()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp.%d" % os.getpid()
    if x.is_cuda:
        # Through pinned memory, a chunk at a time: a pageable copy of GBs runs at a fraction of
        # the bus's speed, and a host copy of the whole tensor doubles what the output costs.
        flat = x.reshape(-1).view(torch.uint8)
        if _staging is None:
            _staging = torch.empty(STAGING_BYTES, dtype=torch.uint8, pin_memory=True)
        with open(tmp, "wb") as f:
            for start in range(0, flat.numel(), STAGING_BYTES):
                end = min(flat.numel(), start + STAGING_BYTES)
                chunk = _staging[:end - start]
                chunk.copy_(flat[start:end])
                f.write(memoryview(chunk.numpy()))
    else:
        x = x.cpu()
        if x.dtype == torch.bfloat16:
            x = x.view(torch.int16)
        x.numpy().tofile(tmp)
    os.replace(tmp, path)


# Elements a summary reads at a time: its temporaries stay small (kopt's tests: a few).
SUMMARY_CHUNK = int(os.environ.get("KOPT_TEST_SUMMARY_CHUNK", 1 << 26))


def summarize(x):
    """What an output holds, counted on its device a chunk at a time: elements, NaN and inf
    counts, the finite minimum and maximum, and a checksum of its bytes (each 32-bit word, or
    byte, times an odd weight of its position, summed modulo 2**64: integer arithmetic, so the
    same bits give the same sum in any order of the reduction)."""
    t0 = _perf_counter()
    flat = x.detach().reshape(-1)
    floating = flat.is_floating_point()
    out = {"elements": flat.numel(), "nan": 0, "inf": 0, "min": None, "max": None}
    squares, finite_count = 0.0, 0
    step = draw_chunk(flat.numel(), SUMMARY_CHUNK)  # temporaries near a tenth of the output
    for start in range(0, flat.numel(), step):
        part = flat[start:start + step]
        if floating:
            finite = part.isfinite()
            nan, n_finite = int(part.isnan().sum()), int(finite.sum())
            out["nan"] += nan
            out["inf"] += part.numel() - n_finite - nan
            wide = torch.where(finite, part, torch.zeros_like(part)).double()
            squares += float((wide * wide).sum())
            finite_count += n_finite
            if bool(finite.any()):
                lo = float(torch.where(finite, part, torch.full_like(part, float("inf"))).min())
                hi = float(torch.where(finite, part, torch.full_like(part, float("-inf"))).max())
            else:
                continue
        else:
            lo, hi = float(part.min()), float(part.max())
            wide = part.double()
            squares += float((wide * wide).sum())
            finite_count += part.numel()
        out["min"] = lo if out["min"] is None else min(out["min"], lo)
        out["max"] = hi if out["max"] is None else max(out["max"], hi)
    raw = flat.contiguous().view(torch.uint8)
    words = raw.view(torch.int32) if raw.numel() % 4 == 0 else raw
    total = torch.zeros((), dtype=torch.int64, device=flat.device)
    step = draw_chunk(words.numel(), SUMMARY_CHUNK)
    for start in range(0, words.numel(), step):
        w = words[start:start + step].to(torch.int64)
        weight = torch.arange(start, start + w.numel(), dtype=torch.int64, device=flat.device) * 2 + 1
        total += (w * weight).sum()
    out["checksum"] = "%016x" % (int(total) & 0xFFFFFFFFFFFFFFFF)
    # kopt's rms(): over the finite elements (the wide seed's atol scale is a ratio of two)
    out["rms"] = json_number(math.sqrt(squares / finite_count)) if finite_count else 0.0
    out["min"] = 0.0 if out["min"] is None else out["min"]
    out["max"] = 0.0 if out["max"] is None else out["max"]
    _spent.append(("summarizing", _perf_counter() - t0))
    return out


# --- Outputs compared where they are: the reference's kept on the trusted process's device,
# a candidate's shared from its own process through CUDA IPC (the driver API, through ctypes:
# torch's own sharing needs files of its own in /dev/shm, which a candidate's room has not).

_driver = None


def _cuda_driver():
    global _driver
    if _driver is None:
        import ctypes
        try:
            _driver = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaIpcError("no CUDA driver library: %s" % e) from e
    return _driver


def _ipc_handle_type():
    import ctypes

    class CUipcMemHandle(ctypes.Structure):
        _fields_ = [("reserved", ctypes.c_ubyte * 64)]
    return CUipcMemHandle


class CudaIpcError(RuntimeError):
    """The driver would not share or open device memory between kopt's processes: the outputs
    then go through files, as before; never a job's verdict."""


def _driver_call(what, rc):
    if rc != 0:
        raise CudaIpcError("%s failed: CUDA driver error %d" % (what, rc))


def share_device_memory(x):
    """{handle, offset}: x's device memory as another process opens it. A handle names a whole
    allocation (torch's allocator carves tensors out of larger ones), so the offset says where x
    starts in it."""
    import ctypes
    drv = _cuda_driver()
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _driver_call("cuMemGetAddressRange", drv.cuMemGetAddressRange_v2(
        ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(x.data_ptr())))
    handle = _ipc_handle_type()()
    _driver_call("cuIpcGetMemHandle", drv.cuIpcGetMemHandle(ctypes.byref(handle), base))
    return {"handle": bytes(handle.reserved).hex(), "offset": x.data_ptr() - base.value}


class CandidateRefused(ValueError):
    """What a candidate's process handed over for comparison is not its outputs: its verdict."""


class _DeviceBytes:
    """Bytes at a device address, as torch.as_tensor takes them (no copy)."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 2}


class _Opened:
    """The candidate's allocations opened in this process, each once (the driver refuses a
    second open of one allocation), closed when the comparison is done."""

    def __init__(self):
        self.ptrs, self.sizes = {}, {}

    def tensor(self, shared, dtype, shape, dev):
        """The output as kopt allocated it (its dtype and shape, not what the candidate's process
        says), inside the allocation the handle opens: a handle or an offset that points
        elsewhere is the candidate's doing, refused before anything is read."""
        import ctypes
        h, offset = str(shared.get("handle", "")), shared.get("offset")
        nbytes = torch.empty((), dtype=_torch_dtype(dtype)).element_size() * math.prod(int(e) for e in shape)
        if len(h) != 128 or not isinstance(offset, int) or offset < 0:
            raise CandidateRefused("the candidate's process shared no valid handle for its output")
        if h not in self.ptrs:
            handle = _ipc_handle_type()()
            ctypes.memmove(handle.reserved, bytes.fromhex(h), 64)
            ptr, base, size = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_size_t()
            _driver_call("cuIpcOpenMemHandle", _cuda_driver().cuIpcOpenMemHandle_v2(
                ctypes.byref(ptr), handle, ctypes.c_uint(1)))  # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
            self.ptrs[h] = ptr.value
            _driver_call("cuMemGetAddressRange", _cuda_driver().cuMemGetAddressRange_v2(
                ctypes.byref(base), ctypes.byref(size), ptr))
            self.sizes[h] = size.value - (ptr.value - base.value)
        if offset + nbytes > self.sizes[h]:
            raise CandidateRefused("the candidate's process shared %d bytes at offset %d of an allocation of %d: "
                                   "its output is not there" % (nbytes, offset, self.sizes[h]))
        raw = torch.as_tensor(_DeviceBytes(self.ptrs[h] + offset, nbytes), device=dev)
        return raw.view(_torch_dtype(dtype)).view(tuple(shape))

    def close(self):
        import ctypes
        for ptr in self.ptrs.values():
            _cuda_driver().cuIpcCloseMemHandle(ctypes.c_uint64(ptr))
        self.ptrs = {}


def _source(where, dtype, shape, dev, opened):
    """A tensor to compare: kept here ({key, name}), shared by a candidate ({handle, offset}) or
    in a file ({path}, read onto the device)."""
    if where.get("key"):
        if where["key"] not in _kept:
            why = ("a reference that ran out of memory beside them had them let go"
                   if _dropped_for_room else "its process was restarted")
            raise KoptEnvironment("the reference's outputs kept as %s are no longer on the device (%s)"
                                  % (where["key"], why))
        return _kept[where["key"]][where["name"]]
    if "handle" in where:
        return opened.tensor(where, dtype, shape, dev)
    return to_torch({"shape": shape, "dtype": dtype, "input_path": where["path"]}, dev)


COMPARE_CHUNK = int(os.environ.get("KOPT_TEST_SUMMARY_CHUNK", 1 << 24))


def json_number(v):
    """v, or its name where JSON has no number for it (kopt reads "Infinity", "-Infinity", "NaN")."""
    if math.isfinite(v):
        return v
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")


def compare_tensors(got, expected, atol, rtol, poison, max_reported=5):
    """kopt's compare_tensors (measure/compare.cpp) on the device, a chunk at a time, in f64: an
    element matches when |got - ref| <= atol + rtol * |ref| (NaN matches NaN, an infinity the
    same infinity); the counts, the largest errors, the relative L2 error and the first
    mismatches come back, never the tensors. `poison`: the bits an unwritten element holds."""
    g, e = got.reshape(-1), expected.reshape(-1)
    n = e.numel()
    r = {"numel": n, "max_abs_err": 0.0, "max_rel_err": 0.0, "mismatches": 0, "nan": 0, "inf": 0,
         "unwritten": 0, "first": []}
    diff_sq = ref_sq = 0.0
    bits = _bits_dtype(g)
    for start in range(0, n, COMPARE_CHUNK):
        gp, ep = g[start:start + COMPARE_CHUNK], e[start:start + COMPARE_CHUNK]
        r["unwritten"] += int((gp.view(bits) == poison).sum())
        gd, ed = gp.double(), ep.double()
        gnan, enan, ginf, einf = gd.isnan(), ed.isnan(), gd.isinf(), ed.isinf()
        r["nan"] += int(gnan.sum())
        r["inf"] += int(ginf.sum())
        special = gnan | enan | ginf | einf
        special_ok = (enan & gnan) | (einf & (gd == ed))
        diff = torch.where(special, torch.zeros_like(gd), (gd - ed).abs())
        ok = torch.where(special, special_ok, diff <= atol + rtol * ed.abs())
        bad = ~ok
        count = int(bad.sum())
        if count:
            r["mismatches"] += count
            if bool((special & ~special_ok).any()):
                r["max_abs_err"] = math.inf
            if len(r["first"]) < max_reported:
                for i in bad.nonzero().reshape(-1)[:max_reported - len(r["first"])].tolist():
                    r["first"].append([start + i, json_number(float(gd[i])), json_number(float(ed[i]))])
        r["max_abs_err"] = max(r["max_abs_err"], float(diff.max()))
        nonzero = ~special & (ed != 0)
        if bool(nonzero.any()):
            r["max_rel_err"] = max(r["max_rel_err"], float((diff / torch.where(nonzero, ed.abs(), torch.ones_like(ed))).max()))
        diff_sq += float((diff * diff).sum())
        ref_sq += float(torch.where(special, torch.zeros_like(ed), ed * ed).sum())
    r["rel_l2_err"] = math.sqrt(diff_sq / ref_sq) if ref_sq > 0 else math.sqrt(diff_sq)
    for k in ("max_abs_err", "max_rel_err", "rel_l2_err"):
        r[k] = json_number(r[k])
    return r


def relative_l2(got, exact):
    """kopt's relative_l2 (measure/compare.cpp) on the device: ||got - exact|| / ||exact|| over
    the elements finite in both; -1 when nothing is."""
    g, e = got.reshape(-1), exact.reshape(-1)
    if g.numel() != e.numel():
        return -1.0
    diff_sq = ref_sq = 0.0
    finite = 0
    for start in range(0, e.numel(), COMPARE_CHUNK):
        gd, ed = g[start:start + COMPARE_CHUNK].double(), e[start:start + COMPARE_CHUNK].double()
        both = gd.isfinite() & ed.isfinite()
        finite += int(both.sum())
        d = torch.where(both, gd - ed, torch.zeros_like(gd))
        diff_sq += float((d * d).sum())
        ref_sq += float(torch.where(both, ed * ed, torch.zeros_like(ed)).sum())
    if finite == 0:
        return -1.0
    return math.sqrt(diff_sq / ref_sq) if ref_sq > 0 else math.sqrt(diff_sq)


def _bits_dtype(x):
    """The integer dtype of x's element width, to compare its elements bit for bit."""
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]


def poison_bits(dtype, dev):
    """The bits poisoned() fills an output of `dtype` with, as the integer type of its width."""
    x = poisoned({"shape": [1], "dtype": dtype}, dev)
    return int(x.view(_bits_dtype(x))[0])


def compare(req):
    """Each output of a candidate against the reference's (and the fp64 reference's, where
    named), on this process's device; only the summaries go back."""
    t0 = _perf_counter()
    dev = device()
    opened = _Opened()
    results = {}
    try:
        for o in req["outputs"]:
            got = _source(o["got"], o["dtype"], o["shape"], dev, opened)
            expected = _source(o["expected"], o["dtype"], o["shape"], dev, opened)
            if tuple(got.shape) != tuple(expected.shape) or got.dtype != expected.dtype:
                raise ValueError("output %s: %s %s against the reference's %s %s" % (
                    o["name"], got.dtype, list(got.shape), expected.dtype, list(expected.shape)))
            r = compare_tensors(got, expected, float(o["atol"]), float(o["rtol"]), poison_bits(o["dtype"], dev))
            if o.get("exact"):
                exact = _source(o["exact"], "f64", o["shape"], dev, opened)
                r["exact_rel_l2"] = json_number(relative_l2(got, exact))
            results[o["name"]] = r
            del got, expected
        if dev.startswith("cuda"):
            torch.cuda.synchronize()
    finally:
        opened.close()
        _spent.append(("comparing", _perf_counter() - t0))
    return results


def accepted(fn, kwargs):
    """The keyword arguments `fn` takes: all of them where it has **kwargs."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return kwargs
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return kwargs
    names = {p.name for p in params}
    return {k: v for k, v in kwargs.items() if k in names}


class KoptEnvironment(RuntimeError):
    """kopt's environment failed (its own tensors did not fit on the device), not the job's
    module: never a candidate's verdict."""


class Call:
    """One job made ready to call: tensors on the device, the module's function bound."""

    def __init__(self, job, share=False):
        self.job = job
        self.share = share  # a bench's baseline: its tensors shared with the others' (made())
        self.dev = device()
        self.tensors = {}
        self.summaries = {}
        for attempt in range(2):
            try:
                if os.environ.get("KOPT_TEST_PLACEMENT_OOM"):  # kopt's tests: its own tensors do not fit
                    raise RuntimeError("CUDA out of memory (KOPT_TEST_PLACEMENT_OOM)")
                for t in job["tensors"]:
                    self.tensors[t["name"]] = self.made(t)
                break
            except RuntimeError as e:  # torch's OutOfMemoryError is a RuntimeError
                # kopt's own tensors: memory another job left cached is given back, once
                self.tensors = {}
                if "out of memory" not in str(e):
                    raise
                if attempt:
                    raise KoptEnvironment("kopt's own tensors of this job do not fit on %s beside what "
                                          "kopt's other processes hold: %s" % (self.dev, str(e).split("\n")[0]))
                release_cached_memory()
        if job.get("f64"):  # the fp64 reference of an f32 problem: every float tensor in f64
            self.tensors = {n: x.double() if x.is_floating_point() else x for n, x in self.tensors.items()}
        self.kwargs = dict(job.get("scalars", {}))
        self.kwargs.update(self.tensors)
        if self.dev.startswith("cuda"):
            torch_clock()  # kopt's clock, taken before the module can reach torch's
        mod = load_module(job["module"], is_candidate(job))
        kind = job["kind"]
        self.tolerance = {k: getattr(mod, k) for k in ("atol", "rtol") if hasattr(mod, k)}
        if kind == "python_reference":
            self.fn = getattr(mod, job.get("entry") or "reference")
            self.call = self.bound_call()
        elif kind == "triton":
            setup = getattr(mod, "setup", None)
            if callable(setup) and not getattr(mod, "_kopt_setup_makes_inputs", False):
                extra = setup(**accepted(setup, self.kwargs))
                if isinstance(extra, dict) and "inputs" in extra and "outputs" in extra:
                    # The skills' setup(**dims): it makes the inputs, which kopt draws itself.
                    mod._kopt_setup_makes_inputs = True
                elif isinstance(extra, dict):
                    self.kwargs.update(extra)
            self.fn = getattr(mod, job.get("entry") or "run_kernel")
            self.call = self.bound_call()
        elif kind in ("torch_eager", "torch_compile"):
            # What is timed: setup_baseline(**kwargs) -> (callable, args), called once untimed
            # (an imported KernelBench model, its weights loaded), then callable(*args); else
            # baseline(**kwargs), the computation as PyTorch users write it; else reference(),
            # which may compute in higher precision and copies into place.
            if hasattr(mod, "setup_baseline"):
                fn, args = mod.setup_baseline(**self.kwargs)
                args, kwargs = list(args), {}
                self.timed_name = "setup_baseline"
            else:
                self.timed_name = "baseline" if hasattr(mod, "baseline") else job.get("entry") or "reference"
                fn = getattr(mod, self.timed_name)
                args, kwargs = [], self.kwargs
            if kind == "torch_compile":
                if not hasattr(torch, "compile"):
                    raise RuntimeError("torch %s has no torch.compile (it came with torch 2.0)" % torch.__version__)
                fn = torch.compile(fn)
            self.fn = fn

            def call():
                with torch.no_grad():
                    return fn(*args, **kwargs)
            self.call = call
        else:
            raise ValueError("unknown job kind " + kind)

    def bound_call(self):
        """fn(**kwargs) without a reference back to this Call: a cycle kept a reference's
        tensors (a 0.3 GiB weight) alive after its job until Python's collector came by."""
        fn, kwargs = self.fn, self.kwargs
        return lambda: fn(**kwargs)

    def made(self, t):
        """A job tensor on the device: drawn, read or poisoned. The PyTorch baselines of one bench
        (eager and torch.compile: the problem's own code, never a candidate's) share theirs, so
        that a problem of GBs is not held twice."""
        if not self.share or self.job["kind"] not in ("torch_eager", "torch_compile"):
            return poisoned(t, self.dev) if t["role"] == "output" else to_torch(t, self.dev)
        key = json.dumps([t["name"], t["dtype"], t["shape"], t["role"], t.get("draw"),
                          "" if t.get("draw") else t.get("input_path"), self.dev], sort_keys=True)
        if key not in _shared:
            _shared[key] = poisoned(t, self.dev) if t["role"] == "output" else to_torch(t, self.dev)
        return _shared[key]

    def land(self, result):
        """A Triton-kind kernel may return its output (a tensor, or a dict by output name)
        instead of writing it in place, as library calls without out= do: kopt copies it into
        place here, after the timed window (the copy is not the kernel's work)."""
        if result is None or self.job["kind"] != "triton":
            return
        outs = [t["name"] for t in self.job["tensors"] if t["role"] != "input"]
        if isinstance(result, dict):
            items = list(result.items())
        elif len(outs) == 1:
            items = [(outs[0], result)]
        else:
            raise ValueError("the kernel returned one value, and the problem has the outputs %s: return a dict "
                             "by name" % ", ".join(outs))
        for name, value in items:
            if name not in outs:
                raise ValueError("the kernel returned '%s', which is not an output (%s)" % (name, ", ".join(outs)))
            target = self.tensors[name]
            if tuple(value.shape) != tuple(target.shape):
                raise ValueError("the kernel returned %s of shape %s; the output has shape %s"
                                 % (name, list(value.shape), list(target.shape)))
            target.copy_(value)

    def keep_inputs(self):
        """What tells after the call whether it modified an input: a drawn one is compared with
        its recipe (None here: no copy); a copy on the device of any other; where the device
        has no room for the copies, {} (those inputs are then written back for kopt to hash)."""
        kept = {}
        try:
            for t in self.job["tensors"]:
                if t["role"] == "input":
                    kept[t["name"]] = None if t.get("draw") else self.tensors[t["name"]].clone()
        except RuntimeError:  # out of memory
            return {t["name"]: None for t in self.job["tensors"] if t["role"] == "input" and t.get("draw")}
        return kept

    def inputs_modified(self, kept):
        spec = {t["name"]: t for t in self.job["tensors"]}
        return [n for n, x in kept.items()
                if not (drawn_unchanged(self.tensors[n], spec[n]["draw"], spec[n]["dtype"]) if x is None
                        else torch.equal(x, self.tensors[n]))]

    def sync(self):
        if self.dev.startswith("cuda"):
            torch_clock().device_sync()

    def outputs(self):
        return {t["name"]: self.tensors[t["name"]] for t in self.job["tensors"] if t["role"] != "input"}

    def keep(self, key, margin):
        """Keeps the outputs on this device under `key` (a check's reference: compare() reads
        them there), with a summary of each, where the device keeps `margin` bytes free beside
        them once this job's other tensors are gone; False where it does not (the outputs are
        then written to their files as usual)."""
        outs = self.outputs()
        others = sum(x.numel() * x.element_size() for n, x in self.tensors.items() if n not in outs)
        if self.dev.startswith("cuda"):
            free = torch.cuda.mem_get_info()[0] + torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        else:  # the host's memory, for outputs of up to 1 GiB: kopt's files are the place for GBs
            if sum(x.numel() * x.element_size() for x in outs.values()) > (1 << 30):
                return False
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        if free + others < margin:
            return False
        _kept[key] = {n: x.detach() for n, x in outs.items()}
        for n, x in outs.items():
            self.summaries[n] = summarize(x)
        return True

    def share_outputs(self):
        """The outputs' device memory for kopt's trusted process to compare (CUDA IPC): {name:
        {handle, offset}}; this Call stays alive until the next request. None where they cannot
        be shared (the CPU, a driver that refuses): then they are written to their files."""
        global _held
        if not self.dev.startswith("cuda"):
            return None
        try:
            shared = {n: share_device_memory(x) for n, x in self.outputs().items()}
        except CudaIpcError as e:
            self.share_refused = str(e)
            return None
        _held = self
        return shared

    def write_outputs(self, kept, outputs=True):
        """The outputs (or their summaries, where the job asks for them), and the inputs nothing
        here compares (`kept`: keep_inputs(), or None when kopt does not ask) for kopt to hash;
        returns the names of those inputs. `outputs` False: the outputs stay where they are
        (kept, or shared)."""
        written = []
        for t in self.job["tensors"]:
            if t["role"] != "input" and not outputs:
                continue
            if t["role"] != "input" and self.job.get("summarize_outputs"):
                self.summaries[t["name"]] = summarize(self.tensors[t["name"]])
            elif t["role"] != "input":
                write_tensor(self.tensors[t["name"]], t["output_path"])
            elif kept is None or t["name"] not in kept:
                write_tensor(self.tensors[t["name"]], t["output_path"])
                written.append(t["name"])
        return written


def flush_l2(nbytes, dev):
    """Rewrites a buffer of nbytes on the device (the GPU's L2, or the CPU's caches)."""
    global _flush
    if nbytes <= 0:
        return
    if _flush is None or _flush.numel() * 4 < nbytes or str(_flush.device) != str(torch.device(dev)):
        _flush = torch.empty(nbytes // 4, dtype=torch.int32, device=dev)
    _flush.zero_()  # rewrites the buffer: dirty lines, as kopt's "write" flush


_cycles_per_s = None


def hold_gpu(seconds):
    """Keeps the GPU busy for about `seconds` (a spin for a cycle count), so that the host's
    Python (dispatch, torch.compile's guards) runs while the GPU is still busy and stays out of
    the timed window, as kopt's blocking kernel keeps launches out of it."""
    global _cycles_per_s
    clock = torch_clock()
    if clock.sleep is None:
        return
    if _cycles_per_s is None:
        start, end = clock.event(), clock.event()
        clock.record(start)
        clock.sleep(1000000)
        clock.record(end)
        clock.wait_done(end)
        _cycles_per_s = 1e6 / max(clock.elapsed(start, end) / 1000.0, 1e-6)
    clock.sleep(int(seconds * _cycles_per_s))


def timed(c, flush_bytes, hold=False):
    """One sample on kopt's clocks: (device seconds of the call, host seconds of the call, host
    seconds the device stayed busy after the window)."""
    flush_l2(flush_bytes, c.dev)
    before = work_starts("sample " + c.job["kind"])  # host calls only, outside the timed window
    if c.dev.startswith("cuda"):
        clock = torch_clock()
        start, end = clock.event(), clock.event()
        if hold:
            hold_gpu(max(50e-6, 3 * getattr(c, "host_s", 0.0)))
        clock.record(start)
        t0 = _perf_counter()
        result = c.call()
        host = _perf_counter() - t0
        clock.record(end)
        clock.wait_done(end)
        # How long the device stays busy after the window: work the call did not wait for (a
        # side stream it did not join), which kopt judges over the whole series.
        t1 = _perf_counter()
        clock.device_sync()
        late = _perf_counter() - t1
        c.land(result)
        work_ends(c, before)
        return clock.elapsed(start, end) / 1000.0, host, late
    t0 = _perf_counter()
    result = c.call()
    seconds = _perf_counter() - t0
    c.land(result)
    return seconds, 0.0, 0.0  # on the CPU the call is the work: nothing apart


def dynamo_counts():
    """torch.compile's own counters: graphs compiled so far and graph breaks; None without dynamo."""
    try:
        from torch._dynamo.utils import counters
    except Exception:  # noqa: BLE001
        return None
    return {"graphs": int(counters["stats"].get("unique_graphs", 0)),
            "graph_breaks": int(sum(counters["graph_break"].values()))}


def forget_modules():
    """Drops the loaded ref.py modules (and the models they keep on the device) between jobs,
    so that a batch of problems does not pile their weights up on the GPU."""
    # No loop variable may hold a module through the collection: one did, and a KernelBench
    # model's 4 GiB weight outlived its bench into the next one (H100, 2026-11-28).
    for name in [getattr(mod, "__name__", "") for mod in _modules.values()]:
        sys.modules.pop(name, None)
    _modules.clear()
    import gc
    gc.collect()
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def forget_compiled():
    """What a warm-up compiled is forgotten: no graph of it counts as a baseline's."""
    try:
        import torch._dynamo
        torch._dynamo.reset()
        from torch._dynamo.utils import counters
        counters.clear()
    except Exception:  # noqa: BLE001
        pass


OTHERS_ALLOWED = 1 << 30  # other processes' memory on the device a problem may find beside it


def others_on_device(dev):
    """Bytes of the device other processes hold (kopt's candidate process, parallel imports, a
    user's): used less what this process's allocator reserved."""
    if os.environ.get("KOPT_TEST_OTHERS_ON_DEVICE"):  # kopt's tests: another process's memory
        return int(os.environ["KOPT_TEST_OTHERS_ON_DEVICE"])
    if not dev.startswith("cuda"):
        return 0
    free, total = torch.cuda.mem_get_info()
    return max(0, total - free - torch.cuda.memory_reserved())


def call_with_room(c):
    """Runs a job's call. A reference (the problem's code, never a candidate's) that runs out of
    memory beside what kopt itself holds is not the problem's failure: the references this
    process kept for a check are let go and it runs once more; where other processes still hold
    more than OTHERS_ALLOWED, the failure is kopt's environment (a resumed run tries it again).
    Only a reference that does not fit with nothing of kopt's beside it fails as its own."""
    global _held, _dropped_for_room
    job = c.job
    retry = not is_candidate(job) and all(t["role"] != "inout" for t in job["tensors"])
    test_oom = os.environ.get("KOPT_TEST_REFERENCE_OOM")  # kopt's tests: "while_kept" or "always"
    for attempt in (0, 1):
        try:
            if retry and test_oom and (test_oom == "always" or _kept):
                raise RuntimeError("CUDA out of memory (KOPT_TEST_REFERENCE_OOM)")
            c.land(c.call())
            c.sync()
            return
        except RuntimeError as e:
            if not retry or "out of memory" not in str(e):
                raise
            kept = sum(x.numel() * x.element_size() for outs in _kept.values() for x in outs.values())
            if attempt == 0 and (_kept or _held is not None):
                _kept.clear()  # a check's comparisons that needed them stop as kopt's environment
                _dropped_for_room = True
                _held = None
                release_cached_memory(always=True)
                sys.stderr.write("kopt: the reference ran out of memory beside %.2f GiB of references kopt "
                                 "kept; they were let go and it runs again\n" % (kept / 2**30))
                continue
            others = others_on_device(c.dev)
            if others > OTHERS_ALLOWED:
                raise KoptEnvironment(
                    "the reference ran out of memory on %s while other processes held %.2f GiB of it "
                    "(kopt's own, or another program's): not the problem's failure; it is tried again "
                    "when nothing runs beside it (%s)" % (c.dev, others / 2**30, str(e).split("\n")[0])) from e
            raise


def release_cached_memory(always=False):
    """Gives the device memory torch's allocator keeps cached back to the device once it is
    large: the reference's process and the candidates' share the GPU, and GBs cached by one
    (a KernelBench problem's reference, its fp64 run) leave the other out of memory."""
    if torch is not None and torch.cuda.is_available() and (always or torch.cuda.memory_reserved() > (1 << 30)):
        import gc
        gc.collect()
        torch.cuda.empty_cache()


def _on_cuda():
    return torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized()


def note_memory(phase):
    """Folds the peak of torch's allocator since the last note into `phase` and starts the next
    one: what each kind of request (a reference's run, a baseline's samples) took at most, so that
    a problem's memory is told by what held it. Reserved counts the allocator's cached blocks too:
    what the device gave this process."""
    if not _on_cuda():
        return
    peak = {"reserved": torch.cuda.max_memory_reserved(), "allocated": torch.cuda.max_memory_allocated()}
    for key, value in peak.items():
        phases = _memory.setdefault(key, {})
        phases[phase] = max(phases.get(phase, 0), value)
    torch.cuda.reset_peak_memory_stats()


def work_starts(phase):
    """Before a call whose working memory is measured: the peak so far goes to `phase` and the
    call's starts from what is allocated now (returned; None where torch cannot count)."""
    if not _on_cuda():
        return None
    note_memory(phase)
    return torch.cuda.memory_allocated()


def work_ends(c, before):
    """After the call: what it allocated at most beside what there was before it (its
    intermediates and results: the problem's own working memory, computed by its reference, its
    eager baseline or torch.compile's), the largest of each kind of job."""
    if before is None:
        return
    work = _memory.setdefault("work", {})
    kind = c.job["kind"]
    work[kind] = max(work.get(kind, 0), torch.cuda.max_memory_allocated() - before)


def memory_report(reset):
    """Op "memory": the peaks by phase since the last report, what is held now, and the largest
    working memory each kind of call took beside the tensors kopt gave it ("work": work_ends).
    `reset`: the cached blocks go back first and the next report counts from here."""
    global _memory
    if not _on_cuda():
        return {"device": device()}
    note_memory("held between requests")
    out = dict(_memory, device=device(), now_reserved=torch.cuda.memory_reserved(),
               now_allocated=torch.cuda.memory_allocated())
    if reset:
        release_cached_memory(always=True)
        torch.cuda.reset_peak_memory_stats()
        _memory = {}
    return out


def handle(req):
    global _held
    op, job = req.get("op"), req.get("job") or {}
    if op == "memory":
        return memory_report(bool(req.get("reset")))
    note_memory("held between requests")
    dropped = False
    if op != "write_held" and _held is not None:
        _held, dropped = None, True  # the outputs a candidate shared: compared by now
    if (op in ("run", "prepare") and job.get("kind") != "triton") or op == "forget_kept":
        # A job of kopt's own that keeps nothing, or keeps for another check: the check that
        # kept references is over (a bench's reference or baselines come next, or the check of
        # another shape), and their GBs go back to the device before this job takes its own.
        check = (job.get("keep_outputs") or "").split("/")[0]
        for k in [k for k in _kept if not check or k.split("/")[0] != check]:
            del _kept[k]
            dropped = True
    if dropped:
        release_cached_memory()
    # The job the request runs: its own, or the prepared variant a sample or a wall call times.
    ran = req.get("job") or (_prepared[req["id"]].job if op in ("sample", "wall") else None)
    reply = handle_op(req)
    note_memory(op if op not in ("run", "prepare", "sample", "wall") else "%s %s%s" % (
        op, (ran or {}).get("kind", ""), " f64" if (ran or {}).get("f64") else ""))
    if op in ("run", "compare"):
        release_cached_memory()
    if ran is not None and is_candidate(ran):
        check_untouched("while kopt ran it")
    return reply


def require_numpy_and_torch():
    """Every op past "hello" needs both; the error says which is missing, and why."""
    if np is None or torch is None:
        raise RuntimeError("this Python (%s) cannot import %s (%s); install it (pip install torch numpy) or point "
                           "KOPT_PYTHON at a Python that has it" % (
                               sys.executable, "numpy" if np is None else "torch",
                               _numpy_error if np is None else _torch_error))


def selftest():
    """What a candidate's process must be able to do, tried before any candidate is loaded: kopt
    starts it confined, and a sandbox that breaks the tools (an import, the GPU, Triton's
    compiler) is kopt's environment failing, never a candidate's verdict."""
    global triton, tl  # a Triton kernel finds its names among its module's globals
    require_numpy_and_torch()
    done = ["numpy", "torch"]
    # A file the tools need, named by kopt's tests: one the sandbox hides stands for a library
    # that reads from a place the sandbox does not know.
    needed = os.environ.get("KOPT_TEST_SELFTEST_READS")
    if needed:
        with open(needed) as f:
            f.read()
    if (not os.environ.get("KOPT_PYTHON_DEVICE") and not device().startswith("cuda") and torch.version.cuda
            and os.path.exists("/dev/nvidiactl")):
        # A GPU this torch could drive, that it cannot reach from here: the sandbox (or the
        # machine) hides something the driver needs, and every candidate would fail on it.
        try:
            torch.cuda.init()
            why = "torch.cuda.is_available() is False"
        except Exception as e:  # noqa: BLE001
            why = str(e).split("\n")[0]
        raise RuntimeError("this machine has an NVIDIA GPU (/dev/nvidiactl) and torch %s was built for CUDA %s, "
                           "but it cannot use it here: %s" % (torch.__version__, torch.version.cuda, why))
    if device().startswith("cuda"):
        x = torch.ones(1024, device=device())
        torch.cuda.synchronize()
        done.append("cuda")
        try:
            import triton
            import triton.language as tl
        except ImportError:
            return done

        @triton.jit
        def _double(x_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2, mask=i < n)

        _double[(4,)](x, 1024, BLOCK=256)
        torch.cuda.synchronize()
        if float(x.sum()) != 2048.0:
            raise RuntimeError("a Triton kernel compiled but computed %r, not 2048" % float(x.sum()))
        done.append("triton")
    return done


def handle_op(req):
    op = req["op"]
    if op == "selftest":
        return {"passed": selftest()}
    if op == "hello":
        info = {"python": sys.version.split()[0], "numpy": np.__version__ if np else None,
                "torch": torch.__version__ if torch else None}
        if torch is not None:
            info["cuda"] = torch.cuda.is_available()
            info["device"] = device()
        try:
            import triton
            info["triton"] = triton.__version__
        except Exception:  # noqa: BLE001
            info["triton"] = None
        return info
    require_numpy_and_torch()
    if op == "run":
        c = Call(req["job"])
        kept = c.keep_inputs() if req.get("compare_inputs") else None
        rng = req.get("nvtx_range")  # ncu --nvtx profiles the launches inside it (kopt profile)
        if rng:
            torch.cuda.nvtx.range_push(rng)
        before = work_starts("inputs " + req["job"]["kind"])
        try:
            call_with_room(c)
            if not req["job"].get("f64"):  # the problem's own computation, not kopt's fp64 one
                work_ends(c, before)
        finally:  # a call that raises must not leave the next job's launches inside this range
            if rng:
                torch.cuda.nvtx.range_pop()
        seconds = timed(c, 0)[0] if req.get("time") else 0.0
        reply = {"tolerance": c.tolerance, "device": c.dev, "device_uuid": device_uuid(c.dev),
                 "seconds": seconds}
        if kept is not None:
            reply["inputs_modified"] = c.inputs_modified(kept)
        job = req["job"]
        # Where the outputs stay on the device (a reference kept for the check's comparisons, a
        # candidate's shared for them), no file of them is written.
        stays = False
        for name, source in (job.get("exact_of") or {}).items():  # the fp64 reference's
            reply.setdefault("exact_error", {})[name] = json_number(relative_l2(
                _source(dict(source, name=name), "f32", list(c.tensors[name].shape), c.dev, None),
                c.tensors[name]))
        if job.get("keep_outputs"):
            stays = c.keep(job["keep_outputs"], int(job.get("keep_margin", 0)))
            reply["kept"] = stays
        elif req.get("share_outputs"):
            shared = c.share_outputs()
            stays = shared is not None
            if stays:
                reply["shared"] = shared
            else:
                reply["share_refused"] = getattr(c, "share_refused", "the outputs are on " + c.dev)
        reply["inputs_written"] = c.write_outputs(kept, outputs=not stays)
        if c.summaries:
            reply["outputs"] = c.summaries
        return reply
    if op == "compare":
        try:
            return {"compared": compare(req)}
        except CudaIpcError as e:
            return {"unopened": str(e)}
        except CandidateRefused as e:
            return {"refused": str(e)}
    if op == "write_held":  # a shared candidate's outputs, to files after all
        if _held is None:  # only code in this process could have shared something else
            raise ValueError("the candidate's process holds no outputs it shared: what it handed over "
                             "for comparison was not kopt's")
        for t in req["job"]["tensors"]:
            if t["role"] != "input":
                write_tensor(_held.tensors[t["name"]], t["output_path"])
        return {}
    if op == "prepare":
        c = Call(req["job"], share=True)
        for _ in range(2):  # the first calls compile (Triton JIT, torch.compile)
            c.call()
        c.sync()
        host = []
        for _ in range(3):  # the host's time for one call, once compiled
            t0 = _perf_counter()
            c.call()
            host.append(_perf_counter() - t0)
            c.sync()
        c.host_s = min(host)
        _prepared[req["id"]] = c
        reply = {"device": c.dev, "device_uuid": device_uuid(c.dev),
                 "timed": getattr(c, "timed_name", c.job.get("entry")), "host_s": c.host_s}
        if c.job["kind"] == "torch_compile":
            reply["dynamo"] = dynamo_counts()
        return reply
    if op == "sample":
        c = _prepared[req["id"]]
        seconds, host, late = timed(c, int(req.get("flush_bytes", 0)), bool(req.get("hold", False)))
        reply = {"seconds": seconds, "host_seconds": host, "late_seconds": late}
        if c.job["kind"] == "torch_compile":
            reply["dynamo"] = dynamo_counts()
        return reply
    if op in ("ping", "forget_kept"):  # a round trip with no work in it (handle() did the forgetting)
        return {}
    if op == "warm":
        # Ahead of the first job, while kopt does other work: the device's context, and with
        # "compile" torch.compile's compiler (dynamo, inductor, Triton) loaded and tried once.
        dev = device()
        x = torch.ones(1024, device=dev)
        if req.get("compile") and hasattr(torch, "compile"):
            torch.compile(lambda t: t * 2 + 1)(x)
            forget_compiled()
        if dev.startswith("cuda"):
            torch.cuda.synchronize()
        return {"device": dev}
    if op == "wall":
        # Back-to-back calls, no flush, no hold: kopt's process times the whole request on its
        # own clock and compares it with what this worker's events reported.
        c = _prepared[req["id"]]
        c.sync()
        for _ in range(int(req["calls"])):  # no land(): its copy is not in a sample's window
            c.call()
        c.sync()
        return {}
    if op == "release":
        _prepared.clear()
        _shared.clear()
        _kept.clear()
        forget_modules()
        return {}
    raise ValueError("unknown op " + op)


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        tampered = False
        t0 = _perf_counter()
        req = {}
        try:
            req = json.loads(line)
            reply = {"ok": True, "result": handle(req)}
        except Tampered as e:
            tampered = True
            reply = {"ok": False, "error": str(e), "tampered": True}
        except KoptEnvironment as e:
            reply = {"ok": False, "error": str(e), "environment": True}
        except Exception as e:  # noqa: BLE001
            reply = {"ok": False, "error": "%s: %s" % (type(e).__name__, e), "traceback": traceback.format_exc()[-4000:]}
        _protocol_out.write(_json_dumps(reply) + "\n")
        _protocol_out.flush()
        seconds = _perf_counter() - t0
        if seconds >= 0.5:  # where a slow request went, in the worker's log
            job = req.get("job") or {}
            shape = (job.get("tensors") or [{}])[0].get("shape", "")
            sys.stderr.write("kopt python worker: %s %s %s %s: %.2f s%s\n" % (
                req.get("op"), job.get("kind", ""), os.path.basename(job.get("module", "")), shape, seconds,
                "".join(" (%s %.2f s)" % part for part in _spent)))
            sys.stderr.flush()
        _spent.clear()
        if tampered:
            os._exit(3)  # not trusted with another candidate: kopt starts a fresh worker


watch()  # this worker's code, the clocks and torch's events, as they are before any user module

if __name__ == "__main__":
    main()
