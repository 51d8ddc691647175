"""What every part of kopt's Python worker shares: torch and numpy (or why they are missing),
kopt's own clocks and JSON encoder, taken before any user module is imported (a candidate that
rewrites time.perf_counter or json.dumps changes what its own code sees, never what kopt reads),
the state kept between requests, the device, the dtypes, and the errors that say whose failure
a failure is."""
import json
import math
import os
import time

_perf_counter = time.perf_counter
_json_dumps = json.dumps

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


class Tampered(Exception):
    """A candidate changed something kopt measures with: its numbers are not a result, and this
    process is not trusted with another candidate (the worker exits after saying so)."""


class KoptEnvironment(RuntimeError):
    """kopt's environment failed (its own tensors did not fit on the device), not the job's
    module: never a candidate's verdict."""


NUMPY_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "i64": "int64", "i32": "int32",
                "i16": "int16", "i8": "int8", "u8": "uint8"}
_modules = {}
_prepared = {}
_shared = {}  # the tensors the baselines of the bench being prepared share (Call.made)
_spent = []  # (what, seconds) of the request being handled: the log says where its time went
_kept = {}  # key -> {output name: tensor}: a reference's outputs kept on its device (Call.keep)
# Reassigned by the parts that change them (state.held = ...), so every part reads the same.
held = None  # the Call whose outputs a candidate shared (Call.share_outputs): alive until the next request
dropped_for_room = False  # a reference's run let the kept references go (call_with_room)


def _torch_dtype(name):
    return getattr(torch, "bfloat16" if name == "bf16" else NUMPY_DTYPES[name])


def device():
    want = os.environ.get("KOPT_PYTHON_DEVICE", "")
    if want:
        return want
    return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"


def device_uuid(dev):
    """The UUID of the GPU a job ran on ("8932f937-..."), for kopt to check it is its own
    device; empty off CUDA or where torch does not say."""
    if not dev.startswith("cuda"):
        return ""
    try:
        return str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
    except Exception:  # noqa: BLE001
        return ""


def is_candidate(job):
    """A kernel under test (its code is not kopt's nor the problem's): watched for tampering."""
    return job["kind"] == "triton"


def json_number(v):
    """v, or its name where JSON has no number for it (kopt reads "Infinity", "-Infinity", "NaN")."""
    if math.isfinite(v):
        return v
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
