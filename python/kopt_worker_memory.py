"""kopt's Python worker and the device's memory: the trusted process's allocator settings, the
cached blocks given back, and the peaks of torch's allocator by kind of request and the working
memory of each call of a problem's computation (op "memory"), so that a problem's memory is
told by what held it."""
import os
import sys

from kopt_worker_state import device, torch


def use_expandable_segments():
    """kopt's trusted process maps its device memory as its tensors grow (torch's expandable
    segments) instead of caching whole blocks: GBs cached in blocks a slightly different request
    could not reuse made a KernelBench problem of 8 GiB hold 12 (9_Tall_skinny, H100). Not in a
    candidate's process (CUDA IPC cannot share such memory), not where the user set
    PYTORCH_CUDA_ALLOC_CONF, and not in a torch without the setting (before 2.1)."""
    if torch is None or os.environ.get("KOPT_PYTHON_ROLE") != "trusted" or os.environ.get("PYTORCH_CUDA_ALLOC_CONF"):
        return
    import warnings
    try:
        with warnings.catch_warnings():  # a newer torch warns that the name is CUDA's alone
            warnings.simplefilter("ignore", FutureWarning)
            torch.cuda.memory._set_allocator_settings("expandable_segments:True")
    except Exception:  # noqa: BLE001 (an older or a CPU-only torch)
        pass


use_expandable_segments()


_memory = {}  # what this process's device memory reached since kopt last asked (note_memory, op "memory")


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


_history = {"dir": os.environ.get("KOPT_MEMORY_HISTORY"), "on": False, "reports": 0}


def record_history():
    """KOPT_MEMORY_HISTORY=DIR: torch's allocator records every allocation and free of kopt's
    trusted process with its Python stack, and each memory report (op "memory": kopt asks at a
    problem's start and end) writes the record since the last as DIR/NNN.pickle and starts the
    next: pytorch.org/memory_viz draws one, scripts/memory-peak names what was live at its peaks.
    A stack walk an allocation: for finding where a problem's memory goes, not for timing it."""
    if not _history["dir"] or _history["on"] or os.environ.get("KOPT_PYTHON_ROLE") != "trusted":
        return
    try:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                 max_entries=1000000)
    except (TypeError, AttributeError, RuntimeError) as e:  # a torch before 2.1 records otherwise
        print("KOPT_MEMORY_HISTORY: torch %s cannot record its allocations here (%s); nothing is "
              "recorded" % (torch.__version__, e), file=sys.stderr)
        _history["dir"] = None
        return
    _history["on"] = True


def dump_history():
    """The record since the last memory report, where it has events, as the next NNN.pickle."""
    if not _history["on"]:
        return
    snapshot = torch.cuda.memory._snapshot()
    if any(snapshot.get("device_traces", [])):
        import pickle
        os.makedirs(_history["dir"], exist_ok=True)
        _history["reports"] += 1
        path = os.path.join(_history["dir"], "%03d.pickle" % _history["reports"])
        with open(path + ".tmp", "wb") as f:
            pickle.dump(snapshot, f)
        os.replace(path + ".tmp", path)
    torch.cuda.memory._record_memory_history(enabled=None)  # the next record starts empty
    _history["on"] = False
    record_history()


def note_memory(phase):
    """Folds the peak of torch's allocator since the last note into `phase` and starts the next
    one: what each kind of request (a reference's run, a baseline's samples) took at most, so that
    a problem's memory is told by what held it. Reserved counts the allocator's cached blocks too:
    what the device gave this process."""
    if not _on_cuda():
        return
    record_history()
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
        # Where the next report's peaks start: what this process still holds (its L2 flush
        # buffer, the CUDA libraries' workspaces), so that kopt tells the growth of torch's
        # allocator in a problem from memory outside it.
        _memory = {"start_reserved": torch.cuda.memory_reserved(),
                   "start_allocated": torch.cuda.memory_allocated()}
    dump_history()
    return out
