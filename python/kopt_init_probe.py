"""kopt init: what a bare kernel file and its ref.py say about their problem, as JSON on stdout.

Usage: python kopt_init_probe.py REQUEST.json

REQUEST is {"mode": "inspect" | "writes", "ref": path or null, "kernel_py": path or null,
"dims": {name: int}, "small_dims": {name: int}, "tensors": [...]}.

inspect  imports the modules (a stand-in for triton where it is missing: only signatures and
         setup() are read here) and reports
           reference   reference()'s parameter names, whether it takes **kwargs, atol/rtol,
                       whether the module has baseline()
           run_kernel  its parameter names and integer defaults (tunable params)
           setup       where a module has setup(**dims) returning {"inputs": {...},
                       "outputs": [...]}: each tensor's dtype, its shape at `dims` and at
                       `small_dims` (so that kopt names every extent by its dim), value
                       statistics, the scalars and the output names
writes   runs reference(**tensors, **small_dims) once on random tensors of the given shapes
         (small_dims) and reports which tensors it wrote and what it returned.
kopt decides everything from these facts (in C++); nothing is decided here. On a machine with
no CUDA GPU, tensors a setup() puts on "cuda" are made on the CPU instead.
"""
import importlib.util
import inspect
import json
import sys
import types

DTYPES = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int32": "i32",
          "int64": "i64", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "u8"}


def fail(message):
    print(json.dumps({"error": message}))
    sys.exit(0)


try:
    import torch
except Exception as e:  # noqa: BLE001
    fail("cannot import torch (%s): kopt init runs ref.py and setup() with PyTorch" % e)


class _Anything:
    """Stands in for triton when it is not installed: every attribute, call and decorator."""

    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]
        return _Anything()

    def __getattr__(self, name):
        return _Anything()

    def __getitem__(self, key):
        return _Anything()


def stand_in_triton():
    try:
        import triton  # noqa: F401
        return
    except Exception:  # noqa: BLE001
        pass
    for name in ("triton", "triton.language", "triton.testing", "triton.runtime"):
        mod = types.ModuleType(name)
        mod.__getattr__ = lambda attr: _Anything()
        sys.modules[name] = mod
    sys.modules["triton"].language = sys.modules["triton.language"]


def cpu_for_cuda():
    """No CUDA here: a tensor asked for on "cuda" is made on the CPU."""
    if torch.cuda.is_available():
        return

    def fix_device(kw):
        d = kw.get("device")
        if d is not None and str(d).startswith("cuda"):
            kw["device"] = "cpu"

    for name in ("randn", "rand", "zeros", "ones", "empty", "full", "randint", "arange", "tensor",
                 "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like", "full_like",
                 "linspace", "eye", "randperm", "normal", "as_tensor"):
        f = getattr(torch, name, None)
        if f is None:
            continue

        def wrapped(*a, _f=f, **kw):
            fix_device(kw)
            return _f(*a, **kw)
        setattr(torch, name, wrapped)
    to = torch.Tensor.to

    def to_cpu(self, *a, **kw):
        a = tuple("cpu" if isinstance(x, (str, torch.device)) and str(x).startswith("cuda") else x for x in a)
        fix_device(kw)
        return to(self, *a, **kw)
    torch.Tensor.to = to_cpu
    torch.Tensor.cuda = lambda self, *a, **k: self


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001
        fail("%s does not import: %s: %s" % (path, type(e).__name__, e))
    return mod


def signature(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {"params": [], "var_kw": True, "defaults": {}}
    params, defaults, var_kw = [], {}, False
    for p in sig.parameters.values():
        if p.kind == p.VAR_KEYWORD:
            var_kw = True
        elif p.kind != p.VAR_POSITIONAL:
            params.append(p.name)
            if p.default is not p.empty and isinstance(p.default, int) and not isinstance(p.default, bool):
                defaults[p.name] = p.default
    return {"params": params, "var_kw": var_kw, "defaults": defaults}


def stats(t):
    x = t.detach().flatten()[: 1 << 22].double()
    x = x[x.isfinite()]
    if x.numel() == 0:
        return {}
    return {"min": float(x.min()), "max": float(x.max()), "mean": float(x.mean()),
            "std": float(x.std()) if x.numel() > 1 else 0.0}


def call_setup(fn, dims):
    out = fn(**dims)
    if not isinstance(out, dict) or "inputs" not in out:
        raise ValueError("setup() returned %s, not {\"inputs\": {...}, \"outputs\": [...]}" % type(out).__name__)
    tensors, scalars = {}, {}
    for name, v in out["inputs"].items():
        if isinstance(v, torch.Tensor):
            tensors[name] = {"dtype": DTYPES.get(str(v.dtype).replace("torch.", ""), str(v.dtype)),
                             "shape": list(v.shape), "stats": stats(v)}
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            scalars[name] = v
    return {"tensors": tensors, "scalars": scalars, "outputs": list(out.get("outputs", []))}


def inspect_mode(req):
    cpu_for_cuda()
    stand_in_triton()
    out = {}
    mods = {}
    if req.get("ref"):
        mods["ref"] = load(req["ref"], "kopt_init_ref")
        ref = mods["ref"]
        if not hasattr(ref, "reference"):
            fail("%s has no reference(**kwargs)" % req["ref"])
        r = signature(ref.reference)
        r.update({k: float(getattr(ref, k)) for k in ("atol", "rtol") if isinstance(getattr(ref, k, None), (int, float))})
        r["baseline"] = hasattr(ref, "baseline")
        out["reference"] = r
    out["kernels"] = []
    for i, path in enumerate(req.get("kernel_py", [])):
        k = load(path, "kopt_init_kernel_%d" % i)
        mods.setdefault("kernel", k)
        if not hasattr(k, "run_kernel"):
            fail("%s has no run_kernel(**kwargs) (the Triton contract)" % path)
        out["kernels"].append(signature(k.run_kernel))
    for where in ("kernel", "ref"):
        mod = mods.get(where)
        if mod is None or not callable(getattr(mod, "setup", None)):
            continue
        try:
            torch.manual_seed(0)
            at_dims = call_setup(mod.setup, req["dims"])
        except Exception as e:  # noqa: BLE001
            fail("setup(%s) of %s failed: %s: %s" % (", ".join("%s=%s" % kv for kv in req["dims"].items()),
                                                     req["kernel_py"][0] if where == "kernel" else req["ref"],
                                                     type(e).__name__, e))
        setup = {"source": where, "at_dims": at_dims}
        try:
            setup["at_small"] = call_setup(mod.setup, req["small_dims"])
        except Exception as e:  # noqa: BLE001
            setup["small_error"] = "%s: %s" % (type(e).__name__, e)
        out["setup"] = setup
        break
    return out


def writes_mode(req):
    cpu_for_cuda()
    ref = load(req["ref"], "kopt_init_ref")
    torch.manual_seed(0)
    kwargs = dict(req["small_dims"])
    kwargs.update(req.get("scalars", {}))
    before = {}
    torch_dtypes = {v: getattr(torch, k) for k, v in DTYPES.items() if k != "bool"}
    for t in req["tensors"]:
        shape = [int(s) for s in t["shape"]]
        dt = torch_dtypes[t["dtype"]]
        x = torch.randn(shape, dtype=torch.float64).to(dt) if dt.is_floating_point else torch.randint(0, 8, shape, dtype=dt)
        kwargs[t["name"]] = x
        before[t["name"]] = x.clone()
    try:
        with torch.no_grad():
            result = ref.reference(**kwargs)
    except Exception as e:  # noqa: BLE001
        return {"error": "%s: %s" % (type(e).__name__, e)}
    written = [n for n, x in before.items() if not torch.equal(kwargs[n], x)]
    out = {"written": written}
    if isinstance(result, torch.Tensor):
        out["returned"] = {"shape": list(result.shape), "dtype": DTYPES.get(str(result.dtype).replace("torch.", ""), "")}
    return out


def main():
    with open(sys.argv[1]) as f:
        req = json.load(f)
    out = inspect_mode(req) if req["mode"] == "inspect" else writes_mode(req)
    print(json.dumps(out))


main()
