"""One timed sample of a prepared call on kopt's clocks: the L2 flushed, the GPU held busy while
the host's Python runs, device events around the call."""
from kopt_worker_guard import torch_clock
from kopt_worker_memory import work_ends, work_starts
from kopt_worker_state import _perf_counter, torch


_flush = None


def same_device(held, wanted):
    """Whether a tensor on `held` is on `wanted`: "cuda" names the current device, which torch
    gives a tensor's device as "cuda:0". Compared as strings, the flush buffer was made again at
    every sample, a second one beside the first for a moment: 120 MiB more at a problem's peak
    on the H200."""
    if held.type != wanted.type:
        return False
    if wanted.index is None and wanted.type == "cuda":
        return held.index == torch.cuda.current_device()
    return wanted.index is None or held.index == wanted.index


def flush_l2(nbytes, dev):
    """Rewrites a buffer of nbytes on the device (the GPU's L2, or the CPU's caches)."""
    global _flush
    if nbytes <= 0:
        return
    if _flush is None or _flush.numel() * 4 < nbytes or not same_device(_flush.device, torch.device(dev)):
        _flush = None  # the one it replaces goes first: never two of them at once
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
