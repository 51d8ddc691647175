"""kopt's Python worker: PyTorch references (ref.py), Triton kernels and PyTorch baselines.

Started by kopt's worker process (which owns the device for CUDA kernels) and driven over
stdin/stdout, one JSON object a line. Inputs come as recipes, drawn here on the job's device
with the same bits as kopt's C++ (draw_tensor, the twin of src/problem/tensor_draw.cpp), or as
raw files; outputs go back as raw files of the tensor's dtype (ndarray.tofile).
Timing decisions stay in kopt: this side takes one sample when asked (a flush of the L2;
with "hold", a spin on the GPU that keeps the host's Python out of the window; then device
events around one call) and returns its device and host seconds.

This script is the protocol; its parts are modules beside it (kopt writes them together):
kopt_worker_state (what they share), _guard (the clocks and the watch over them), _memory,
_draw (the seeded inputs), _tensors (in and out), _compare (outputs compared where they are),
_call (a job made ready to call) and _timing (one sample).

Ops: hello; run {job}; prepare {id, job}; sample {id, flush_bytes, hold}; release {id}.
For torch.compile jobs, prepare and sample also report dynamo's counters (graphs compiled,
graph breaks), so kopt can say that a noisy baseline recompiled while it was timed.
A job: kind (python_reference | triton | torch_eager | torch_compile), module (a .py file;
the torch kinds time its setup_baseline() or baseline() where it has one, else reference()),
entry, tensors [{name, dtype, shape, role, draw, input_path, output_path}], scalars {name: value}.
"""
import json
import os
import sys
import traceback

_protocol_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)  # print() from user code lands in the log, never in the protocol stream

import kopt_worker_state as state  # noqa: E402 (the protocol's stream first: imports may print)
from kopt_worker_call import Call, call_with_room, dynamo_counts, forget_compiled, forget_modules  # noqa: E402
from kopt_worker_compare import CandidateRefused, CudaIpcError, _source, compare, relative_l2  # noqa: E402
from kopt_worker_guard import check_untouched, watch  # noqa: E402
from kopt_worker_draw import _fused_fn  # noqa: E402
from kopt_worker_memory import memory_report, note_memory, release_cached_memory, work_ends, work_starts  # noqa: E402
from kopt_worker_state import (KoptEnvironment, Tampered, _json_dumps, _kept, _perf_counter, _prepared,  # noqa: E402
                               _shared, _spent, device, device_uuid, is_candidate, json_number, np, torch)
from kopt_worker_tensors import write_tensor  # noqa: E402
from kopt_worker_timing import flush_l2, timed  # noqa: E402


def handle(req):
    op, job = req.get("op"), req.get("job") or {}
    if op == "memory":
        return memory_report(bool(req.get("reset")))
    note_memory("held between requests")
    dropped = False
    if op != "write_held" and state.held is not None:
        state.held, dropped = None, True  # the outputs a candidate shared: compared by now
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


def load_libraries(dev):
    """The CUDA libraries a first GEMM or convolution loads (cuBLAS, cuBLASLt, cuDNN: their
    handles, workspaces and first kernels), loaded at the warm-up: the first problem to use one
    counted them as its own, 64 MiB outside torch's allocator on the H200. Timed in the warm-up's
    log line: the warm-up is what a batch's first problem waits for."""
    t0 = _perf_counter()
    a = torch.ones(64, 64, device=dev)
    torch.nn.functional.linear(a, a, a[0])  # cuBLASLt (addmm), and cuBLAS's handle
    a.mm(a)
    try:
        torch.nn.functional.conv2d(torch.ones(1, 1, 8, 8, device=dev), torch.ones(1, 1, 3, 3, device=dev))
    except RuntimeError:  # a torch without cuDNN: its problems load what they use
        pass
    torch.cuda.synchronize()
    _spent.append(("loading cuBLAS and cuDNN", _perf_counter() - t0))


def require_numpy_and_torch():
    """Every op past "hello" needs both; the error says which is missing, and why."""
    if np is None or torch is None:
        raise RuntimeError("this Python (%s) cannot import %s (%s); install it (pip install torch numpy) or point "
                           "KOPT_PYTHON at a Python that has it" % (
                               sys.executable, "numpy" if np is None else "torch",
                               state._numpy_error if np is None else state._torch_error))


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
        if state.held is None:  # only code in this process could have shared something else
            raise ValueError("the candidate's process holds no outputs it shared: what it handed over "
                             "for comparison was not kopt's")
        for t in req["job"]["tensors"]:
            if t["role"] != "input":
                write_tensor(state.held.tensors[t["name"]], t["output_path"])
        return {}
    if op == "prepare":
        c = Call(req["job"], share=True)
        # The first calls compile (Triton JIT, torch.compile): what torch.compile's compiler
        # allocates there (inductor benchmarks the padding of an irregular GEMM on tensors of its
        # own) is the call's working memory too.
        before = work_starts("prepare " + c.job["kind"])
        for _ in range(2):
            c.call()
        c.sync()
        work_ends(c, before)
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
        t0 = _perf_counter()
        dev = device()
        x = torch.ones(1024, device=dev)
        if dev.startswith("cuda"):
            torch.cuda.synchronize()
            _spent.append(("the GPU's context", _perf_counter() - t0))
        if req.get("compile") and hasattr(torch, "compile"):
            t0 = _perf_counter()
            torch.compile(lambda t: t * 2 + 1)(x)
            forget_compiled()
            _spent.append(("torch.compile's first call", _perf_counter() - t0))
        if dev.startswith("cuda"):
            _fused_fn()  # the draw's kernel, compiled ahead of the first problem's inputs
            load_libraries(dev)
            # The timing's L2 flush buffer, kept for the process's life: made now, before any
            # problem's tensors, it never sits between a problem's blocks.
            flush_l2(int(req.get("flush_bytes", 0)), dev)
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
