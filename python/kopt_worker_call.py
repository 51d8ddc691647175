"""One job made ready to call (Call: its tensors on the device, its module's function bound),
the modules it loads, and a reference's call given room where kopt's own memory was in its way."""
import hashlib
import importlib.machinery
import importlib.util
import inspect
import json
import math
import os
import sys

import kopt_worker_state as state
from kopt_worker_compare import CudaIpcError, share_device_memory
from kopt_worker_draw import drawn_unchanged
from kopt_worker_guard import check_untouched, torch_clock, watch
from kopt_worker_memory import release_cached_memory
from kopt_worker_state import KoptEnvironment, _kept, _modules, _shared, device, is_candidate, torch
from kopt_worker_tensors import placeholder, poisoned, summarize, to_torch, write_tensor


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


class Call:
    """One job made ready to call: tensors on the device, the module's function bound."""

    def __init__(self, job, share=False):
        self.job = job
        self.share = share  # a bench's baseline: its tensors shared with the others' (made())
        self.dev = device()
        self.tensors = {}
        self.summaries = {}
        # A baseline whose setup_baseline() returns its outputs (a KernelBench Model's forward)
        # reads the outputs kopt gives it for their device and dtype only: empty ones, where a
        # poisoned output of GBs beside the one it returns took a problem past its memory bound.
        # A reference that says REFERENCE_RETURNS_OUTPUTS returns its outputs by name when it
        # is given empty ones, and those are the outputs (land()).
        self.lean = False
        if job["kind"] in ("torch_eager", "torch_compile", "python_reference"):
            if self.dev.startswith("cuda"):
                torch_clock()  # kopt's clock, taken before the module can reach torch's
            mod = load_module(job["module"])
            if job["kind"] == "python_reference":
                self.lean = getattr(mod, "REFERENCE_RETURNS_OUTPUTS", False) is True
            else:
                self.lean = hasattr(mod, "setup_baseline") and getattr(mod, "BASELINE_RETURNS_OUTPUTS", False) is True
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

    def take_outputs(self, result):
        """The outputs a reference returned by name, each of its declared shape and of the dtype
        of the empty one it was given (f64 in kopt's fp64 reference)."""
        outs = [t for t in self.job["tensors"] if t["role"] == "output"]
        if not isinstance(result, dict) or any(t["name"] not in result for t in outs):
            raise ValueError("%s says REFERENCE_RETURNS_OUTPUTS, and its reference() returned %s, not a dict of "
                             "the outputs %s by name" % (os.path.basename(self.job["module"]), type(result).__name__,
                                                          ", ".join(t["name"] for t in outs)))
        for t in outs:
            given, value = self.tensors[t["name"]], result[t["name"]]
            if value.numel() != math.prod(t["shape"]):
                raise ValueError("reference() returned %s with %d elements; the problem's shape %s has %d" % (
                    t["name"], value.numel(), t["shape"], math.prod(t["shape"])))
            value = value.reshape(t["shape"]).to(given.dtype).contiguous()
            self.tensors[t["name"]] = value
            self.kwargs[t["name"]] = value

    def bound_call(self):
        """fn(**kwargs) without a reference back to this Call: a cycle kept a reference's
        tensors (a 0.3 GiB weight) alive after its job until Python's collector came by."""
        fn, kwargs = self.fn, self.kwargs
        return lambda: fn(**kwargs)

    def made(self, t):
        """A job tensor on the device: drawn, read or poisoned. The PyTorch baselines of one bench
        (eager and torch.compile: the problem's own code, never a candidate's) share theirs, so
        that a problem of GBs is not held twice."""
        if self.lean and t["role"] == "output":
            return placeholder(t, self.dev)
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
        place here, after the timed window (the copy is not the kernel's work). A lean
        reference's returned outputs become the job's outputs, with no copy."""
        if self.lean and self.job["kind"] == "python_reference":
            self.take_outputs(result)
            return
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
        if not self.dev.startswith("cuda"):
            return None
        try:
            shared = {n: share_device_memory(x) for n, x in self.outputs().items()}
        except CudaIpcError as e:
            self.share_refused = str(e)
            return None
        state.held = self
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
            if attempt == 0 and (_kept or state.held is not None):
                _kept.clear()  # a check's comparisons that needed them stop as kopt's environment
                state.dropped_for_room = True
                state.held = None
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
