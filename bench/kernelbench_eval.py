#!/usr/bin/env python3
"""A KernelBench-style evaluator of a ModelNew against its Model, in a plain Python process.

    python3 bench/kernelbench_eval.py MODEL_FILE MODELNEW_FILE [--trials 5] [--atol 1e-2]
        [--rtol 1e-2] [--device cuda] [--timing-iters 100] [--warmup 3] [--json]

As KernelBench evaluates a submission: MODEL_FILE defines Model, get_inputs() and
get_init_inputs(); MODELNEW_FILE defines ModelNew (it may define Model too: then one file
serves as both arguments). Model(*get_init_inputs()) and ModelNew(*get_init_inputs()) are built
after torch.manual_seed(0) each, and Model's state_dict is copied into ModelNew where the names
and shapes match. Each trial draws get_inputs() after torch.manual_seed(trial), runs both models
and compares every output with torch.allclose at atol / rtol. When all trials agree, both models
are timed: warm-up calls, then one CUDA event pair around each call (on a CPU device,
time.perf_counter around each call, and the table says so).

Exit 0 when ModelNew is correct, 1 when it is not (a wrong output, a different shape, an error in
its forward), 2 on bad input (a file that does not load, a missing Model / ModelNew /
get_inputs, a bad option).
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback

import torch


class BadInput(Exception):
    pass


def load(path, name):
    if not os.path.isfile(path):
        raise BadInput("%s: no such file" % path)
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the file itself is broken: bad input, not a wrong kernel
        raise BadInput("%s does not load: %s: %s" % (path, type(e).__name__, e))
    return module


def need(module, path, name):
    if not hasattr(module, name):
        raise BadInput("%s defines no %s" % (path, name))
    return getattr(module, name)


def to_device(values, device):
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build(cls, init_inputs, device):
    torch.manual_seed(0)
    return cls(*init_inputs).to(device).eval()


def copy_state(ref, new):
    """Model's parameters and buffers into ModelNew where names and shapes match; how many."""
    theirs = new.state_dict()
    copied = 0
    for name, value in ref.state_dict().items():
        if name in theirs and theirs[name].shape == value.shape:
            theirs[name] = value
            copied += 1
    new.load_state_dict(theirs)
    return copied


def compare(ref_out, new_out, atol, rtol):
    """(correct, max_abs_diff, why) of one trial's outputs."""
    ref_out, new_out = as_list(ref_out), as_list(new_out)
    if len(ref_out) != len(new_out):
        return False, None, "Model returned %d outputs, ModelNew %d" % (len(ref_out), len(new_out))
    worst = 0.0
    for i, (a, b) in enumerate(zip(ref_out, new_out)):
        if not isinstance(b, torch.Tensor):
            return False, None, "output %d of ModelNew is %s, not a tensor" % (i, type(b).__name__)
        if a.shape != b.shape:
            return False, None, "output %d: shape %s, Model's is %s" % (i, list(b.shape), list(a.shape))
        if a.dtype != b.dtype:
            return False, None, "output %d: dtype %s, Model's is %s" % (i, b.dtype, a.dtype)
        if a.numel():
            diff = (a.double() - b.double()).abs()
            worst = max(worst, float(diff.max()) if not torch.isnan(diff).any() else float("nan"))
        if not torch.allclose(a, b, atol=atol, rtol=rtol):
            return False, worst, "output %d differs beyond atol %g / rtol %g" % (i, atol, rtol)
    return True, worst, ""


def time_model(model, inputs, device, warmup, iters):
    """Milliseconds of each of `iters` calls after `warmup` calls."""
    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
        sync(device)
        samples = []
        for _ in range(iters):
            if device.type == "cuda":
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                model(*inputs)
                end.record()
                torch.cuda.synchronize(device)
                samples.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                model(*inputs)
                samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def evaluate(args):
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BadInput("--device %s: torch %s sees no CUDA device" % (args.device, torch.__version__))
    ref_mod = load(args.model_file, "kopt_eval_model")
    new_mod = ref_mod if os.path.abspath(args.model_file) == os.path.abspath(args.modelnew_file) \
        else load(args.modelnew_file, "kopt_eval_modelnew")
    model_cls = need(ref_mod, args.model_file, "Model")
    get_inputs = need(ref_mod, args.model_file, "get_inputs")
    get_init_inputs = need(ref_mod, args.model_file, "get_init_inputs")
    new_cls = need(new_mod, args.modelnew_file, "ModelNew")
    report = {"model_file": args.model_file, "modelnew_file": args.modelnew_file,
              "device": str(device), "atol": args.atol, "rtol": args.rtol,
              "timer": "cuda_event" if device.type == "cuda" else "perf_counter",
              "correct": False, "trials": [], "max_abs_diff": None,
              "ref_ms": None, "new_ms": None, "speedup": None, "error": None}
    init_inputs = to_device(get_init_inputs(), device)
    try:
        ref = build(model_cls, init_inputs, device)
    except Exception as e:
        raise BadInput("Model(*get_init_inputs()) fails: %s: %s" % (type(e).__name__, e))
    try:
        new = build(new_cls, init_inputs, device)
        report["state_dict_copied"] = copy_state(ref, new)
    except Exception as e:
        report["error"] = "ModelNew(*get_init_inputs()): %s: %s" % (type(e).__name__, e)
        return report
    worst = 0.0
    for trial in range(args.trials):
        torch.manual_seed(trial)
        inputs = to_device(get_inputs(), device)
        with torch.no_grad():
            ref_out = ref(*inputs)
            try:
                new_out = new(*inputs)
                sync(device)
            except Exception as e:
                report["error"] = "ModelNew.forward, trial %d: %s: %s" % (trial, type(e).__name__, e)
                if args.verbose:
                    traceback.print_exc()
                return report
        ok, diff, why = compare(ref_out, new_out, args.atol, args.rtol)
        report["trials"].append({"trial": trial, "correct": ok, "max_abs_diff": diff, "why": why})
        if diff is not None:
            worst = max(worst, diff) if diff == diff else diff
        report["max_abs_diff"] = worst
        if not ok:
            report["error"] = "trial %d: %s" % (trial, why)
            return report
    report["correct"] = True
    torch.manual_seed(0)
    inputs = to_device(get_inputs(), device)
    ref_ms = time_model(ref, inputs, device, args.warmup, args.timing_iters)
    new_ms = time_model(new, inputs, device, args.warmup, args.timing_iters)
    report["ref_ms"] = statistics.mean(ref_ms)
    report["new_ms"] = statistics.mean(new_ms)
    report["ref_median_ms"] = statistics.median(ref_ms)
    report["new_median_ms"] = statistics.median(new_ms)
    report["speedup"] = report["ref_ms"] / report["new_ms"] if report["new_ms"] > 0 else None
    return report


def finite(v):
    """The report with NaN and infinities as null: JSON has no such numbers."""
    if isinstance(v, float) and v != v or v in (float("inf"), float("-inf")):
        return None
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [finite(x) for x in v]
    return v


def print_table(r):
    timer = "CUDA events" if r["timer"] == "cuda_event" else "time.perf_counter (CPU: no CUDA events)"
    print("Model    %s\nModelNew %s\ndevice   %s" % (r["model_file"], r["modelnew_file"], r["device"]))
    for t in r["trials"]:
        diff = "-" if t["max_abs_diff"] is None else "%.3g" % t["max_abs_diff"]
        print("  trial %d  %-9s max_abs_diff %s  %s" % (t["trial"], "correct" if t["correct"] else "WRONG",
                                                       diff, t["why"]))
    print("correct  %s (atol %g, rtol %g)" % ("yes" if r["correct"] else "no", r["atol"], r["rtol"]))
    if r["error"]:
        print("error    %s" % r["error"])
    if r["correct"]:
        print("timing   %s, mean over the iterations (median in brackets)" % timer)
        print("  Model     %10.4f ms  (%.4f)" % (r["ref_ms"], r["ref_median_ms"]))
        print("  ModelNew  %10.4f ms  (%.4f)" % (r["new_ms"], r["new_median_ms"]))
        print("  speedup   %10.3fx" % r["speedup"] if r["speedup"] else "  speedup   -")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model_file")
    p.add_argument("modelnew_file")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--atol", type=float, default=1e-2)
    p.add_argument("--rtol", type=float, default=1e-2)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--timing-iters", type=int, default=100)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json", action="store_true")
    p.add_argument("--verbose", action="store_true", help="print ModelNew's traceback")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        if args.trials < 1 or args.timing_iters < 1 or args.warmup < 0:
            raise BadInput("--trials and --timing-iters take 1 or more, --warmup 0 or more")
        report = evaluate(args)
    except BadInput as e:
        if args.json:
            print(json.dumps({"error": str(e), "exit_code": 2}, indent=2))
        print("kernelbench_eval: %s" % e, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(finite(report), indent=2))
    else:
        print_table(report)
    return 0 if report["correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
