"""A job's tensors on their way in and out of kopt's Python worker: drawn or read onto the
device, outputs poisoned before the call, written back as raw files through pinned memory, or
summarized where they are (counts, range and a checksum: no file)."""
import errno
import math
import os

from kopt_worker_draw import draw_tensor, five_percent_step
from kopt_worker_state import NUMPY_DTYPES, KoptEnvironment, _perf_counter, _spent, _torch_dtype, json_number, np, torch


def to_torch(t, dev):
    shape = tuple(t["shape"])
    if t.get("draw"):
        return draw_tensor(t["draw"], t["dtype"], shape, dev)
    if t["dtype"] == "bf16":
        raw = np.fromfile(t["input_path"], dtype=np.int16).reshape(shape)
        return torch.from_numpy(raw).view(torch.bfloat16).to(dev)
    return torch.from_numpy(np.fromfile(t["input_path"], dtype=NUMPY_DTYPES[t["dtype"]]).reshape(shape)).to(dev)


def poisoned(t, dev):
    shape, dt = tuple(t["shape"]), _torch_dtype(t["dtype"])
    if t["dtype"] in ("f32", "f64", "f16", "bf16"):
        return torch.full(shape, float("nan"), dtype=dt, device=dev)
    return torch.full(shape, -0x5A5A5A5B if t["dtype"] in ("i32", "i64") else 0x5A, dtype=dt, device=dev)


def placeholder(t, dev):
    """An output no one writes, as an empty tensor of its dtype on its device: what a baseline
    that returns its outputs reads of the ones kopt gives it (BASELINE_RETURNS_OUTPUTS)."""
    return torch.empty((0,), dtype=_torch_dtype(t["dtype"]), device=dev)


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


# Elements a summary or a device comparison reads at a time, at most (kopt's tests: a few).
SUMMARY_CHUNK = int(os.environ.get("KOPT_TEST_SUMMARY_CHUNK", 1 << 24))
SUMMARY_TEMP_BYTES = 40  # a summary's temporaries an element (five_percent_step)


def summarize(x):
    """What an output holds, counted on its device a chunk at a time: elements, NaN and inf
    counts, the finite minimum and maximum, and a checksum of its bytes (each 32-bit word, or
    byte, times an odd weight of its position, summed modulo 2**64: integer arithmetic, so the
    same bits give the same sum in any order of the reduction). The counts add up on the device
    and are read once at the end: one read a chunk made a summary of 256 chunks wait on the
    GPU a thousand times."""
    t0 = _perf_counter()
    flat = x.detach().reshape(-1)
    floating = flat.is_floating_point()
    out = {"elements": flat.numel(), "nan": 0, "inf": 0, "min": None, "max": None}
    zero = torch.zeros((), dtype=torch.int64, device=flat.device)
    nan, finite_count, squares = zero.clone(), zero.clone(), zero.double()
    lo = hi = None
    step = five_percent_step(flat.numel(), flat.element_size(), SUMMARY_TEMP_BYTES, SUMMARY_CHUNK)
    for start in range(0, flat.numel(), step):
        part = flat[start:start + step]
        if floating:
            finite = part.isfinite()
            nan += part.isnan().sum()
            finite_count += finite.sum()
            wide = torch.where(finite, part, torch.zeros_like(part)).double()
            part_lo = torch.where(finite, part, torch.full_like(part, float("inf"))).min()
            part_hi = torch.where(finite, part, torch.full_like(part, float("-inf"))).max()
        else:
            finite_count += part.numel()
            wide = part.double()
            part_lo, part_hi = part.min(), part.max()
        squares += (wide * wide).sum()
        lo = part_lo if lo is None else torch.minimum(lo, part_lo)
        hi = part_hi if hi is None else torch.maximum(hi, part_hi)
    raw = flat.contiguous().view(torch.uint8)
    words = raw.view(torch.int32) if raw.numel() % 4 == 0 else raw
    total = zero.clone()
    step = five_percent_step(words.numel(), words.element_size(), SUMMARY_TEMP_BYTES, SUMMARY_CHUNK)
    for start in range(0, words.numel(), step):
        w = words[start:start + step].to(torch.int64)
        weight = torch.arange(start, start + w.numel(), dtype=torch.int64, device=flat.device) * 2 + 1
        total += (w * weight).sum()
    out["checksum"] = "%016x" % (int(total) & 0xFFFFFFFFFFFFFFFF)
    finite_count = int(finite_count)
    if floating:
        out["nan"] = int(nan)
        out["inf"] = flat.numel() - finite_count - out["nan"]
    # kopt's rms(): over the finite elements (the wide seed's atol scale is a ratio of two)
    out["rms"] = json_number(math.sqrt(float(squares) / finite_count)) if finite_count else 0.0
    out["min"] = float(lo) if finite_count else 0.0
    out["max"] = float(hi) if finite_count else 0.0
    _spent.append(("summarizing", _perf_counter() - t0))
    return out
