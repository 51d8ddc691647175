"""Outputs compared where they are: the reference's kept on the trusted process's device, a
candidate's shared from its own process through CUDA IPC (the driver API, through ctypes:
torch's own sharing needs files of its own in /dev/shm, which a candidate's room has not), and
compared there by kopt's rule, in f64, a chunk at a time; only the summaries go back."""
import math

import kopt_worker_state as state
from kopt_worker_state import KoptEnvironment, _kept, _perf_counter, _spent, _torch_dtype, device, json_number, torch
from kopt_worker_draw import five_percent_step
from kopt_worker_tensors import SUMMARY_CHUNK, poisoned, to_torch


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
                   if state.dropped_for_room else "its process was restarted")
            raise KoptEnvironment("the reference's outputs kept as %s are no longer on the device (%s)"
                                  % (where["key"], why))
        return _kept[where["key"]][where["name"]]
    if "handle" in where:
        return opened.tensor(where, dtype, shape, dev)
    return to_torch({"shape": shape, "dtype": dtype, "input_path": where["path"]}, dev)


# A comparison's temporaries an element (both sides in f64, the masks, the differences), for
# five_percent_step; at most SUMMARY_CHUNK elements a step.
COMPARE_TEMP_BYTES = 80


def compare_chunk(n, element_bytes):
    return five_percent_step(n, element_bytes, COMPARE_TEMP_BYTES, SUMMARY_CHUNK)


def _judged(gp, ep, atol, rtol):
    """One step of compare_tensors: both sides in f64, which elements are special (NaN or
    infinite on either side) and which of those match, the absolute differences (0 where
    special) and the mismatches."""
    gd, ed = gp.double(), ep.double()
    gnan, enan, ginf, einf = gd.isnan(), ed.isnan(), gd.isinf(), ed.isinf()
    special = gnan | enan | ginf | einf
    special_ok = (enan & gnan) | (einf & (gd == ed))
    diff = torch.where(special, torch.zeros_like(gd), (gd - ed).abs())
    bad = ~torch.where(special, special_ok, diff <= atol + rtol * ed.abs())
    return gd, ed, gnan, ginf, special, special_ok, diff, bad


def compare_tensors(got, expected, atol, rtol, poison, max_reported=5):
    """kopt's compare_tensors (measure/compare.cpp) on the device, a step at a time, in f64: an
    element matches when |got - ref| <= atol + rtol * |ref| (NaN matches NaN, an infinity the
    same infinity); the counts, the largest errors, the relative L2 error and the first
    mismatches come back, never the tensors. `poison`: the bits an unwritten element holds.
    The counts and sums add up on the device and are read once (and the steps with mismatches
    judged again for the first of them): a read a step made the CPU wait on the GPU nine times
    a step."""
    g, e = got.reshape(-1), expected.reshape(-1)
    n = e.numel()
    counts = torch.zeros(5, dtype=torch.int64, device=g.device)  # unwritten, nan, inf, bad, special bad
    sums = torch.zeros(4, dtype=torch.float64, device=g.device)  # max abs, max rel, diff^2, ref^2
    bits = _bits_dtype(g)
    step = compare_chunk(n, g.element_size())
    per_step = []
    for start in range(0, n, step):
        gp, ep = g[start:start + step], e[start:start + step]
        gd, ed, gnan, ginf, special, special_ok, diff, bad = _judged(gp, ep, atol, rtol)
        bad_here = bad.sum()
        per_step.append(bad_here)
        counts += torch.stack([(gp.view(bits) == poison).sum(), gnan.sum(), ginf.sum(), bad_here,
                               (special & ~special_ok).sum()])
        nonzero = ~special & (ed != 0)
        rel = (diff / torch.where(nonzero, ed.abs(), torch.ones_like(ed))).max()
        rel = torch.where(nonzero.any(), rel, torch.zeros_like(rel))
        sums[0] = torch.maximum(sums[0], diff.max())
        sums[1] = torch.maximum(sums[1], rel)
        sums[2] += (diff * diff).sum()
        sums[3] += torch.where(special, torch.zeros_like(ed), ed * ed).sum()
    unwritten, nan, inf, mismatches, special_bad = counts.tolist()
    max_abs, max_rel, diff_sq, ref_sq = sums.tolist()
    r = {"numel": n, "max_abs_err": math.inf if special_bad else max_abs, "max_rel_err": max_rel,
         "mismatches": mismatches, "nan": nan, "inf": inf, "unwritten": unwritten, "first": []}
    if mismatches:
        for k, bad_here in enumerate(torch.stack(per_step).tolist()):
            if not bad_here or len(r["first"]) >= max_reported:
                continue
            start = k * step
            gd, ed, *_, bad = _judged(g[start:start + step], e[start:start + step], atol, rtol)
            for i in bad.nonzero().reshape(-1)[:max_reported - len(r["first"])].tolist():
                r["first"].append([start + i, json_number(float(gd[i])), json_number(float(ed[i]))])
    r["rel_l2_err"] = math.sqrt(diff_sq / ref_sq) if ref_sq > 0 else math.sqrt(diff_sq)
    for k in ("max_abs_err", "max_rel_err", "rel_l2_err"):
        r[k] = json_number(r[k])
    return r


def relative_l2(got, exact):
    """kopt's relative_l2 (measure/compare.cpp) on the device: ||got - exact|| / ||exact|| over
    the elements finite in both; -1 when nothing is. Summed on the device, read once."""
    g, e = got.reshape(-1), exact.reshape(-1)
    if g.numel() != e.numel():
        return -1.0
    sums = torch.zeros(3, dtype=torch.float64, device=g.device)  # finite, diff^2, ref^2
    step = compare_chunk(e.numel(), e.element_size())
    for start in range(0, e.numel(), step):
        gd, ed = g[start:start + step].double(), e[start:start + step].double()
        both = gd.isfinite() & ed.isfinite()
        d = torch.where(both, gd - ed, torch.zeros_like(gd))
        sums += torch.stack([both.sum().double(), (d * d).sum(),
                             torch.where(both, ed * ed, torch.zeros_like(ed)).sum()])
    finite, diff_sq, ref_sq = sums.tolist()
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
    """Each output of a candidate (a Python one's, or a CUDA kernel's that kopt's executor
    shared) against the reference's (and the fp64 reference's, where named), on this process's
    device; only the summaries go back."""
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
            # An output of kopt's executor holds its poison (the request says its bits), a
            # candidate's this process's own.
            poison = int(o["poison"]) if o.get("poison") is not None else poison_bits(o["dtype"], dev)
            r = compare_tensors(got, expected, float(o["atol"]), float(o["rtol"]), poison)
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
