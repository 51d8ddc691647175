"""kopt import kernelbench: the facts of one KernelBench problem, as JSON on stdout.

Usage: python kopt_kernelbench_import.py PROBLEM.py
       python kopt_kernelbench_import.py --serve     (one file's path a line on stdin, its facts
                                                      a line on stdout: torch is imported once for
                                                      a whole batch)
       python kopt_kernelbench_import.py --fork-server SOCKET
                                                     (torch imported once, then a child forked
                                                      for each connection, serving it as --serve
                                                      does: include/kopt/core/fork_server.hpp)

A KernelBench problem defines Model (an nn.Module), get_inputs() and get_init_inputs().
This builds the model (seeded), calls get_inputs(), runs forward once (on the GPU where
there is one, else on the CPU; KOPT_IMPORT_DEVICE=cpu forces the CPU) while
recording the torch functions it calls, and reports:
  globals     the module-level integers, in source order (the problem's sizes)
  forward     Model.forward's argument names, in order
  inputs      each argument: a tensor (shape, dtype, value statistics) or a constant
  parameters  the model's parameters and buffers (name, shape, dtype, statistics)
  outputs     the results of forward (shape, dtype)
  ops         each recorded call: name, the shapes of its tensor arguments, its result's
              shape, and what its cost formula needs besides: a pooling call's kernel size,
              an einsum's equation, a dropout's p and training flag
kopt turns these into kopt.toml and ref.py (in C++); no decision is taken here.
"""
import ast
import contextlib
import importlib.util
import inspect
import json
import os
import sys
import time

_LAUNCHED = time.perf_counter()  # the script's first line: the process's start is timed from here

# View and bookkeeping calls: no arithmetic, not part of any cost.
_IGNORED = {
    "__get__", "__getitem__", "__setitem__", "__len__", "__iter__", "__repr__", "__format__", "__bool__",
    "size", "dim", "numel", "view", "reshape", "contiguous", "transpose", "permute", "t", "unsqueeze",
    "squeeze", "flatten", "expand", "expand_as", "to", "float", "half", "double", "cpu", "cuda", "clone",
    "detach", "type", "is_contiguous", "stride", "split", "chunk", "narrow", "select", "unbind",
    "dtype", "shape", "device", "requires_grad_", "new_empty", "new_zeros", "empty_like", "zeros_like",
    "ones_like",
}


# Value statistics of a tensor larger than this come from an evenly strided sample of it.
_STATS_SAMPLE = 1 << 26


class Refused(Exception):
    """The file cannot be imported: the message says why (kopt's answer is {"error": ...})."""


def fail(message):
    raise Refused(message)


def out_of_memory(e):
    """torch's OutOfMemoryError (a RuntimeError), or the allocator's words in another error."""
    return "out of memory" in str(e).lower()


def stats(t):
    x = t.detach().flatten()
    if x.numel() > _STATS_SAMPLE:  # KernelBench's inputs reach billions of elements: a strided sample
        x = x[::x.numel() // _STATS_SAMPLE]
    x = x.double()
    if x.numel() == 0:
        return {}
    finite = x[x.isfinite()]
    out = {"min": float(finite.min()) if finite.numel() else 0.0,
           "max": float(finite.max()) if finite.numel() else 0.0,
           "mean": float(finite.mean()) if finite.numel() else 0.0,
           "std": float(finite.std()) if finite.numel() > 1 else 0.0,
           "integral": bool((finite == finite.round()).all()) if finite.numel() else True,
           "non_finite": int(x.numel() - finite.numel())}
    return out


def dtype_name(torch, dt):
    names = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
             torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
             torch.bool: "bool"}
    return names.get(dt, str(dt))


def module_integers(path):
    tree = ast.parse(open(path).read(), path)
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            if isinstance(t, ast.Name):
                names.append((t.id, node.lineno))
    return names


_served = [0]  # files this process imported: each module gets a name of its own


def facts_of(path):
    try:
        import torch
        from torch.overrides import TorchFunctionMode
    except Exception as e:  # noqa: BLE001
        fail("this Python cannot import torch (%s): install it (pip install torch, or apt-get install "
             "python3-torch) or point KOPT_PYTHON at a Python that has it" % e)
    _served[0] += 1
    spec = importlib.util.spec_from_file_location("kernelbench_problem_%d" % _served[0], path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001
        fail("%s does not load: %s: %s" % (path, type(e).__name__, e))
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, name):
            fail("%s has no %s: a KernelBench problem defines Model, get_inputs and get_init_inputs" % (path, name))

    facts = {"globals": [], "forward": [], "inputs": [], "parameters": [], "outputs": [], "ops": [],
             "torch": torch.__version__}
    for name, line in module_integers(path):
        v = getattr(mod, name, None)
        if isinstance(v, int) and not isinstance(v, bool):
            facts["globals"].append({"name": name, "value": v, "line": line})

    # On the GPU where there is one: KernelBench's tensors reach several GB, which a CPU takes
    # minutes to draw and to run through the model. The facts (shapes, dtypes, statistics,
    # the calls of forward) are the same on either device.
    device = "cpu"
    if os.environ.get("KOPT_IMPORT_DEVICE", "") != "cpu" and torch.cuda.is_available():
        device = "cuda"
    facts["device"] = device

    def on_device():  # a torch before 2.0 has no device context; it runs on the CPU anyway
        return torch.device(device) if device != "cpu" else contextlib.nullcontext()
    torch.manual_seed(0)
    init = list(mod.get_init_inputs())
    with on_device():
        model = mod.Model(*init)
    facts["init_inputs"] = [repr(v) for v in init]
    torch.manual_seed(1)
    with on_device():
        inputs = list(mod.get_inputs())

    params = inspect.signature(model.forward).parameters
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params.values()) or len(names) < len(inputs):
        names = names + ["x%d" % i for i in range(len(names), len(inputs))]
    names = names[:len(inputs)]
    facts["forward"] = names
    for n, v in zip(names, inputs):
        if isinstance(v, torch.Tensor):
            facts["inputs"].append({"name": n, "tensor": True, "shape": list(v.shape),
                                    "dtype": dtype_name(torch, v.dtype), "stats": stats(v)})
        else:
            facts["inputs"].append({"name": n, "tensor": False, "value": repr(v)})
    seen = set()
    for kind, items in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for n, t in items:
            if n in seen:
                continue
            seen.add(n)
            facts["parameters"].append({"name": n, "kind": kind, "shape": list(t.shape),
                                        "dtype": dtype_name(torch, t.dtype), "stats": stats(t)})

    calls = []

    class Recorder(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            name = getattr(func, "__name__", str(func))
            if name in _IGNORED:
                return result

            def shapes(xs):
                out = []
                for x in xs:
                    if isinstance(x, torch.Tensor):
                        out.append(list(x.shape))
                    elif isinstance(x, (list, tuple)) and x and all(isinstance(y, torch.Tensor) for y in x):
                        out.extend(list(y.shape) for y in x)
                return out
            call = {"name": name.strip("_"), "args": shapes(list(args) + list(kwargs.values())),
                    "result": shapes([result])[0] if shapes([result]) else []}
            if "pool" in name:
                ks = kwargs.get("kernel_size", args[1] if len(args) > 1 else None)
                if ks is not None:
                    call["kernel_size"] = list(ks) if isinstance(ks, (list, tuple)) else [int(ks)]
            if name == "einsum" and args and isinstance(args[0], str):
                call["equation"] = args[0]
            if "dropout" in name:  # F.dropout(input, p, training), torch.dropout(input, p, train)
                p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
                training = kwargs.get("training", kwargs.get("train", args[2] if len(args) > 2 else True))
                call["p"], call["training"] = float(p), bool(training)
            calls.append(call)
            return result

    try:
        with torch.no_grad(), Recorder():
            result = model(*inputs)
    except Exception as e:  # noqa: BLE001
        if out_of_memory(e):
            raise
        fail("Model.forward failed on get_inputs(): %s: %s" % (type(e).__name__, e))
    facts["ops"] = calls
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    for r in results:
        if not isinstance(r, torch.Tensor):
            fail("Model.forward returned a %s; kopt needs tensors" % type(r).__name__)
        facts["outputs"].append({"shape": list(r.shape), "dtype": dtype_name(torch, r.dtype)})
    return facts


def answer(path):
    """The facts of one file, or {"error": why}; {"error", "out_of_memory": true} where the GPU
    had no room for it (beside what kopt's other imports held: kopt tries it again alone)."""
    try:
        return facts_of(path)
    except Refused as e:
        return {"error": str(e)}
    except Exception as e:  # noqa: BLE001
        if out_of_memory(e):
            return {"error": "the GPU ran out of memory importing it: %s" % str(e).split("\n")[0],
                    "out_of_memory": True}
        import traceback
        return {"error": "%s: %s" % (type(e).__name__, e), "crashed": traceback.format_exc()[-2000:]}
    finally:
        release()


def release():
    """What one file left behind (its module, model and tensors) is given back before the next."""
    import gc
    for name in [n for n in sys.modules if n.startswith("kernelbench_problem_")]:
        del sys.modules[name]
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def started(imported_s=None):
    """The process's start, before its first file: torch imported and the GPU's context made,
    which a harness of one process pays once for all its problems. Its seconds (from the
    script's first line) go with the first answer, so that kopt tells them from the file's own
    import; a failure here is left to the first file's answer, which says why. A forked child
    counts its server's import of torch (`imported_s`) and its own context from its fork."""
    forked = time.perf_counter()
    try:
        import torch
        if os.environ.get("KOPT_IMPORT_DEVICE", "") != "cpu" and torch.cuda.is_available():
            torch.zeros(1, device="cuda")
    except Exception:  # noqa: BLE001
        pass
    if imported_s is None:
        return time.perf_counter() - _LAUNCHED
    return imported_s + time.perf_counter() - forked


def serve(requests, protocol, imported_s=None):
    """Answers a file's facts for each request line, until the requests end."""
    start_s = started(imported_s)
    for line in requests:
        if not line.strip():
            continue
        reply = answer(json.loads(line)["file"])
        if start_s is not None:
            reply["process_start_s"], start_s = start_s, None
        protocol.write(json.dumps(reply) + "\n")
        protocol.flush()


def serve_stdio():
    # Answers go to the real stdout; what a problem's module prints goes to stderr.
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    serve(sys.stdin, protocol)


def fork_server(path):
    """One Python that imports torch, with no CUDA call (a forked child makes its own context:
    CUDA does not survive a fork), then forks a child for each connection to `path`. N import
    threads of kopt's then wait for one import of torch, not N at once on the same CPUs. Ends
    when its stdin closes; a child ends when its connection does."""
    import select
    import signal
    import socket
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(128)  # connections wait here while torch is imported
    print("listening", flush=True)
    try:
        import torch  # noqa: F401
        from torch.overrides import TorchFunctionMode  # noqa: F401
    except Exception:  # noqa: BLE001  (each child's first answer says why)
        pass
    imported_s = time.perf_counter() - _LAUNCHED
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped as they end
    while True:
        ready, _, _ = select.select([server, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
            return
        if server not in ready:
            continue
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                served(conn, imported_s)
            finally:
                os._exit(0)
        conn.close()


def served(conn, imported_s):
    """A forked child: its log from the first line, its pid in answer, then --serve's protocol."""
    requests = conn.makefile("r")
    protocol = conn.makefile("w")
    hello = json.loads(requests.readline() or "{}")
    log = os.open(hello.get("log", os.devnull), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the server's stdin is kopt's, not this child's
    os.close(devnull)
    protocol.write(json.dumps({"pid": os.getpid()}) + "\n")
    protocol.flush()
    serve(requests, protocol, imported_s)


def main():
    if sys.argv[1:] == ["--serve"]:
        serve_stdio()
    elif len(sys.argv) == 3 and sys.argv[1] == "--fork-server":
        fork_server(sys.argv[2])
    elif len(sys.argv) == 2:
        print(json.dumps(answer(sys.argv[1])))
    else:
        print(json.dumps({"error": "usage: kopt_kernelbench_import.py PROBLEM.py | --serve | "
                                   "--fork-server SOCKET"}))


if __name__ == "__main__":
    main()
