"""kopt's Python worker: PyTorch references (ref.py), Triton kernels and PyTorch baselines.

Started by kopt's worker process (which owns the device for CUDA kernels) and driven over
stdin/stdout, one JSON object a line. Tensors cross as raw files of the tensor's dtype,
read with numpy.fromfile and written with ndarray.tofile: no per-element Python lists.
Timing decisions stay in kopt: this side takes one sample when asked (a flush of the L2;
with "hold", a spin on the GPU that keeps the host's Python out of the window; then device
events around one call) and returns its device and host seconds.

Ops: hello; run {job}; prepare {id, job}; sample {id, flush_bytes, hold}; release {id}.
For torch.compile jobs, prepare and sample also report dynamo's counters (graphs compiled,
graph breaks), so kopt can say that a noisy baseline recompiled while it was timed.
A job: kind (python_reference | triton | torch_eager | torch_compile), module (a .py file;
the torch kinds time its setup_baseline() or baseline() where it has one, else reference()),
entry, tensors [{name, dtype, shape, role, input_path, output_path}], scalars {name: value}.
"""
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import traceback

_protocol_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)  # print() from user code lands in the log, never in the protocol stream

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

NUMPY_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "i64": "int64", "i32": "int32",
                "i16": "int16", "i8": "int8", "u8": "uint8"}
_modules = {}
_prepared = {}
_flush = None


def device():
    want = os.environ.get("KOPT_PYTHON_DEVICE", "")
    if want:
        return want
    return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"


def load_module(path):
    key = (path, os.path.getmtime(path))
    if key not in _modules:
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
    return _modules[key]


def to_torch(t, dev):
    shape = tuple(t["shape"])
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


def write_tensor(x, path):
    x = x.detach().contiguous().cpu()
    if x.dtype == torch.bfloat16:
        x = x.view(torch.int16)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp.%d" % os.getpid()
    x.numpy().tofile(tmp)
    os.replace(tmp, path)


class Call:
    """One job made ready to call: tensors on the device, the module's function bound."""

    def __init__(self, job):
        self.job = job
        self.dev = device()
        self.tensors = {}
        for t in job["tensors"]:
            self.tensors[t["name"]] = poisoned(t, self.dev) if t["role"] == "output" else to_torch(t, self.dev)
        self.kwargs = dict(job.get("scalars", {}))
        self.kwargs.update(self.tensors)
        mod = load_module(job["module"])
        kind = job["kind"]
        self.tolerance = {k: getattr(mod, k) for k in ("atol", "rtol") if hasattr(mod, k)}
        if kind == "python_reference":
            self.fn = getattr(mod, job.get("entry") or "reference")
            self.call = lambda: self.fn(**self.kwargs)
        elif kind == "triton":
            if hasattr(mod, "setup"):
                extra = mod.setup(**self.kwargs)
                if isinstance(extra, dict):
                    self.kwargs.update(extra)
            self.fn = getattr(mod, job.get("entry") or "run_kernel")
            self.call = lambda: self.fn(**self.kwargs)
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
        """Copies of the input tensors on their device, to tell after the call whether it
        modified one; None where the device has no room for them (the inputs are then written
        back for kopt to hash)."""
        try:
            return {t["name"]: self.tensors[t["name"]].clone() for t in self.job["tensors"] if t["role"] == "input"}
        except RuntimeError:  # out of memory
            return None

    def sync(self):
        if self.dev.startswith("cuda"):
            torch.cuda.synchronize()

    def write_outputs(self, inputs_after):
        for t in self.job["tensors"]:
            if t["role"] != "input":
                write_tensor(self.tensors[t["name"]], t["output_path"])
            elif inputs_after:
                write_tensor(self.tensors[t["name"]], t["output_path"])


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
    """Keeps the GPU busy for about `seconds` (torch.cuda._sleep spins for a cycle count), so
    that the host's Python (dispatch, torch.compile's guards) runs while the GPU is still busy
    and stays out of the timed window, as kopt's blocking kernel keeps launches out of it."""
    global _cycles_per_s
    if not hasattr(torch.cuda, "_sleep"):
        return
    if _cycles_per_s is None:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(1000000)
        end.record()
        end.synchronize()
        _cycles_per_s = 1e6 / max(start.elapsed_time(end) / 1000.0, 1e-6)
    torch.cuda._sleep(int(seconds * _cycles_per_s))


def timed(c, flush_bytes, hold=False):
    """One sample: (device seconds of the call, host seconds of the call)."""
    flush_l2(flush_bytes, c.dev)
    if c.dev.startswith("cuda"):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if hold:
            hold_gpu(max(50e-6, 3 * getattr(c, "host_s", 0.0)))
        start.record()
        t0 = time.perf_counter()
        result = c.call()
        host = time.perf_counter() - t0
        end.record()
        end.synchronize()
        c.land(result)
        return start.elapsed_time(end) / 1000.0, host
    t0 = time.perf_counter()
    result = c.call()
    seconds = time.perf_counter() - t0
    c.land(result)
    return seconds, 0.0  # on the CPU the call is the work: nothing apart


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
    for key, mod in list(_modules.items()):
        sys.modules.pop(getattr(mod, "__name__", ""), None)
    _modules.clear()
    import gc
    gc.collect()
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def handle(req):
    op = req["op"]
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
    if np is None or torch is None:
        raise RuntimeError("this Python lacks %s; install it (pip install torch numpy) or point KOPT_PYTHON at a "
                           "Python that has it" % ("numpy" if np is None else "torch"))
    if op == "run":
        c = Call(req["job"])
        kept = c.keep_inputs() if req.get("compare_inputs") else None
        rng = req.get("nvtx_range")  # ncu --nvtx profiles the launches inside it (kopt profile)
        if rng:
            torch.cuda.nvtx.range_push(rng)
        try:
            c.land(c.call())
            c.sync()
        finally:  # a call that raises must not leave the next job's launches inside this range
            if rng:
                torch.cuda.nvtx.range_pop()
        seconds = timed(c, 0)[0] if req.get("time") else 0.0
        reply = {"tolerance": c.tolerance, "device": c.dev, "seconds": seconds}
        if kept is not None:
            reply["inputs_modified"] = [n for n, x in kept.items() if not torch.equal(x, c.tensors[n])]
        c.write_outputs(inputs_after=kept is None)
        return reply
    if op == "prepare":
        c = Call(req["job"])
        for _ in range(2):  # the first calls compile (Triton JIT, torch.compile)
            c.call()
        c.sync()
        host = []
        for _ in range(3):  # the host's time for one call, once compiled
            t0 = time.perf_counter()
            c.call()
            host.append(time.perf_counter() - t0)
            c.sync()
        c.host_s = min(host)
        _prepared[req["id"]] = c
        reply = {"device": c.dev, "timed": getattr(c, "timed_name", c.job.get("entry"))}
        if c.job["kind"] == "torch_compile":
            reply["dynamo"] = dynamo_counts()
        return reply
    if op == "sample":
        c = _prepared[req["id"]]
        seconds, host = timed(c, int(req.get("flush_bytes", 0)), bool(req.get("hold", False)))
        reply = {"seconds": seconds, "host_seconds": host}
        if c.job["kind"] == "torch_compile":
            reply["dynamo"] = dynamo_counts()
        return reply
    if op == "release":
        _prepared.clear()
        forget_modules()
        return {}
    raise ValueError("unknown op " + op)


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            reply = {"ok": True, "result": handle(req)}
        except Exception as e:  # noqa: BLE001
            reply = {"ok": False, "error": "%s: %s" % (type(e).__name__, e), "traceback": traceback.format_exc()[-4000:]}
        _protocol_out.write(json.dumps(reply) + "\n")
        _protocol_out.flush()


if __name__ == "__main__":
    main()
