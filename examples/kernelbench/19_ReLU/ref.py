# The PyTorch reference of the KernelBench problem 19_ReLU.py (model.py, as it came), written by
# `kopt import kernelbench`. kopt calls reference(**tensors, **dims) with its own inputs and
# checks kernels against what it writes; `kopt bench --vs-torch` times setup_baseline()'s
# model on the same inputs, eager and through torch.compile, as KernelBench times it.
import importlib.util
import os
import sys
import weakref

import torch

# KernelBench's own correctness check: torch.allclose(output, reference, atol=1e-02, rtol=1e-02).
atol = 1e-02
rtol = 1e-02

FORWARD = [  # Model.forward's arguments, in order: kopt tensors, or get_inputs()' constants
    ("tensor", "x"),
]
PARAMETERS = {  # the model's parameters and buffers, loaded from these kopt tensors
}
OUTPUTS = ["out"]
BOOL_INPUTS = []  # u8 tensors of 0 and 1 that forward takes as bool

_spec = importlib.util.spec_from_file_location(
    "kopt_kernelbench_e9486eb447e8", os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.py"))
_kb = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _kb
_spec.loader.exec_module(_kb)
_models = {}


def _made_on(device, make):
    """make() (a model) on `device`, seeded; on the CPU first where that fails."""
    torch.manual_seed(0)
    try:
        with torch.device(device):
            return make().to(device)
    except Exception:  # noqa: BLE001 (torch < 2.0, or an __init__ that needs the CPU)
        torch.manual_seed(0)
        return make().to(device)


def _made_empty(make, kw, f64):
    """make() (a model) on the meta device, its parameters kopt's tensors themselves and its
    buffers copies of them (forward may update a buffer); None where torch cannot make it there
    or some of its state would not be kopt's (a tensor attribute, a tied weight): the model is
    then made on the device (_made_on)."""
    try:
        with torch.device("meta"):
            model = make()
    except Exception:  # noqa: BLE001 (torch < 2.0, or an __init__ that needs real tensors)
        return None
    if f64:
        model = model.double()
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    if set(state) != set(PARAMETERS):
        return None
    with torch.no_grad():
        for name, tensor in PARAMETERS.items():
            owner, _, leaf = name.rpartition(".")
            module, target = model.get_submodule(owner), state[name]
            value = kw[tensor].reshape(target.shape)
            if leaf in module._parameters:
                module._parameters[leaf] = torch.nn.Parameter(
                    value if value.dtype == target.dtype else value.to(target.dtype),
                    requires_grad=target.requires_grad)
            else:
                module._buffers[leaf] = value.to(target.dtype, copy=True)
    for module in model.modules():
        held = list(vars(module).values()) + list(module._parameters.values()) + list(module._buffers.values())
        if any(isinstance(v, torch.Tensor) and v.is_meta for v in held):
            return None
    return model


def _loaded_from(held, source):
    """Whether the weights came from these tensors, unwritten since (see _held)."""
    return held is not None and len(held) == len(source) and all(
        r() is t and v == t._version for (r, v), t in zip(held, source))


def _held(source):
    """Weak references and versions: a freed tensor's id and address come back for others."""
    return [(weakref.ref(t), t._version) for t in source]


def _bound(kw):
    """The model on the outputs' device, its weights those of kw, and forward's arguments."""
    device = kw[OUTPUTS[0]].device
    # f64 outputs: kopt's fp64 reference of this f32 problem (the same weights, in f64)
    f64 = kw[OUTPUTS[0]].dtype == torch.float64
    key = (device, f64)
    if key not in _models:
        make = lambda: _kb.Model(*_kb.get_init_inputs())  # noqa: E731
        model = _made_empty(make, kw, f64)
        if model is not None:  # its weights kopt's tensors already
            held = _held([kw[t] for t in PARAMETERS.values()])
        else:
            model = _made_on(device, make)
            model, held = model.double() if f64 else model, None
        state = dict(model.named_parameters())
        state.update(dict(model.named_buffers()))
        # its weights' shapes, and those that are kopt's tensors themselves (_let_go)
        same = [n for n, t in PARAMETERS.items() if isinstance(state[n], torch.nn.Parameter)
                and kw[t].dtype == state[n].dtype]
        _models[key] = [model, held, {n: t.shape for n, t in state.items()}, same]
    entry = _models[key]
    source = [kw[t] for t in PARAMETERS.values()]
    if PARAMETERS and not _loaded_from(entry[1], source):
        state = dict(entry[0].named_parameters())
        state.update(dict(entry[0].named_buffers()))
        with torch.no_grad():
            for name, tensor in PARAMETERS.items():  # a 0-dim buffer is a kopt tensor of shape [1]
                target, value = state[name], kw[tensor].reshape(entry[2][name])
                if isinstance(target, torch.nn.Parameter) and value.dtype == target.dtype:
                    target.data = value  # kopt's tensor itself: no second copy of GBs
                else:  # a buffer, which forward may update (BatchNorm's statistics)
                    target.copy_(value)
        entry[1] = _held(source)
    return entry[0], [(kw[v].bool() if v in BOOL_INPUTS else kw[v]) if k == "tensor" else v
                      for k, v in FORWARD]


def _let_go(model):
    """kopt's tensors leave the model when its call is over (bound again at the next call)."""
    entry = next(e for e in _models.values() if e[0] is model)
    with torch.no_grad():
        for name, target in entry[0].named_parameters():
            if name in entry[3]:
                target.data = target.data.new_empty(0)
    entry[1] = None


# setup_baseline()'s model returns its outputs; of kopt's output tensors it reads the device and
# dtype only, so kopt gives the baselines empty ones.
BASELINE_RETURNS_OUTPUTS = True


def setup_baseline(**kw):
    return _bound(kw)


# reference() returns forward's results by name where kopt gives it empty outputs (the same
# device and dtype), and copies them into the outputs it is given otherwise.
REFERENCE_RETURNS_OUTPUTS = True


def reference(**kw):
    model, args = _bound(kw)
    try:
        with torch.no_grad():
            result = model(*args)
    finally:
        _let_go(model)
    results = result if isinstance(result, (tuple, list)) else [result]
    returned = {}
    for name, value in zip(OUTPUTS, results):
        if kw[name].numel() == 0 and value.numel() != 0:  # kopt's empty output
            returned[name] = value
        else:
            kw[name].copy_(value.reshape(kw[name].shape))
    return returned or None
