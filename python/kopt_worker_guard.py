"""What kopt's Python worker times with, and its watch over it: the CUDA events and device
synchronisation through torch's C types, and a snapshot of everything a candidate could rewrite
to change kopt's numbers (the clocks, torch's events, triton's timers, the JSON kopt replies
with, and every function and class of this worker's modules), compared after a candidate's
code has run."""
import json
import sys
import time

from kopt_worker_state import Tampered, torch


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


_modules_seen = {}  # prefix -> module: held here, so that one taken out of sys.modules is still read


def _kopt_modules():
    """This worker's modules: its script (run as __main__, where it is the worker) and its parts,
    each as first seen."""
    for name, mod in list(sys.modules.items()):
        if mod is None:
            continue
        if name == "__main__" and hasattr(mod, "_protocol_out"):
            _modules_seen.setdefault("", mod)
        elif name.startswith("kopt_worker_"):
            _modules_seen.setdefault(name[len("kopt_worker_"):] + ".", mod)
    return list(_modules_seen.items())


def _watched():
    """What a candidate could rewrite to change kopt's numbers, by name: the clocks, the torch
    events and streams, triton's own timers, the JSON kopt replies with, and this worker's code
    (the script's names as "kopt worker NAME", a part's as "kopt worker PART.NAME")."""
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
    for prefix, mod in _kopt_modules():
        if not prefix:
            out["kopt worker _protocol_out"] = getattr(mod, "_protocol_out", None)
        for k, v in vars(mod).items():
            if callable(v):  # its functions and classes, whoever replaced them
                out["kopt worker " + prefix + k] = v
                if isinstance(v, type):
                    for m, f in vars(v).items():
                        out["kopt worker %s%s.%s" % (prefix, k, m)] = f
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
    changed += sorted(k for k in _seen if k not in now and k.startswith("kopt worker"))  # deleted
    if changed:
        raise Tampered("the candidate replaced %s %s: kopt times with its own copies, and a candidate that "
                       "rewrites a timer is refused (its numbers are not a result)" % (", ".join(changed[:8]), when))
