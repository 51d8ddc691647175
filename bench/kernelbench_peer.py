#!/usr/bin/env python3
"""The peer of `kopt import kernelbench --check --vs-torch`: an in-process harness in
KernelBench's own style, run beside kopt on the same problems (issue: tensors stay on the GPU).

    python3 bench/kernelbench_peer.py FILE... [--iters 100] [--warmup 3] [--json OUT]
    python3 bench/kernelbench_peer.py --largest N DIR      (the N problems of DIR with the most
                                                            bytes of inputs and outputs)

For each problem, in one process, as KernelBench's evaluation does it: import the module, build
Model(*get_init_inputs()) after torch.manual_seed(0), draw get_inputs() (on the CPU, as
KernelBench does), move the inputs to the GPU, run the reference once, then time eager with one
CUDA event pair around each of --iters calls after --warmup calls. Prints one line a problem
with its wall time and where it went; --json writes them. --largest runs the models on torch's
meta device: nothing is allocated.
"""
import argparse
import gc
import glob
import importlib.util
import json
import os
import statistics
import sys
import time

import torch


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tensors(values):
    values = values if isinstance(values, (list, tuple)) else [values]
    return [v for v in values if isinstance(v, torch.Tensor)]


def nbytes(values):
    return sum(t.numel() * t.element_size() for t in tensors(values))


def largest(folder, n):
    """The n problems of `folder` with the most bytes of inputs and outputs, largest first."""
    sizes = []
    for i, path in enumerate(sorted(glob.glob(os.path.join(folder, "*.py")))):
        try:
            with torch.device("meta"):
                mod = load(path, "kopt_peer_size_%d" % i)
                inputs = mod.get_inputs()
                model = mod.Model(*mod.get_init_inputs())
                out = model(*inputs)
            sizes.append((nbytes(inputs) + nbytes(out), path))
        except Exception:  # noqa: BLE001 (an op without a meta kernel: its inputs alone)
            try:
                with torch.device("meta"):
                    sizes.append((nbytes(load(path, "kopt_peer_in_%d" % i).get_inputs()), path))
            except Exception:  # noqa: BLE001
                pass
    sizes.sort(key=lambda s: (-s[0], s[1]))
    return [(path, size) for size, path in sizes[:n]]


def evaluate(path, i, iters, warmup):
    row = {"problem": os.path.splitext(os.path.basename(path))[0]}
    t0 = time.perf_counter()
    mod = load(path, "kopt_peer_%d" % i)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs()).cuda().eval()
    t1 = time.perf_counter()
    inputs = mod.get_inputs()
    t2 = time.perf_counter()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in inputs]
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    with torch.no_grad():
        out = model(*inputs)
        torch.cuda.synchronize()
        t4 = time.perf_counter()
        for _ in range(warmup):
            model(*inputs)
        torch.cuda.synchronize()
        samples = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end))
    t5 = time.perf_counter()
    row.update({"bytes": nbytes(inputs) + nbytes(out), "wall_s": t5 - t0, "build_s": t1 - t0,
                "get_inputs_s": t2 - t1, "to_gpu_s": t3 - t2, "reference_s": t4 - t3,
                "timing_s": t5 - t4, "eager_ms": statistics.median(samples),
                "peak_gpu_bytes": torch.cuda.max_memory_allocated()})
    del model, inputs, out
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--largest", type=int, default=0)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    if args.largest:
        if len(args.files) != 1 or not os.path.isdir(args.files[0]):
            ap.error("--largest N takes one folder of problems")
        for path, size in largest(args.files[0], args.largest):
            print("%s %d" % (path, size))
        return 0
    if not torch.cuda.is_available():
        ap.error("torch %s sees no CUDA device" % torch.__version__)
    rows = []
    for i, path in enumerate(args.files):
        try:
            row = evaluate(path, i, args.iters, args.warmup)
        except Exception as e:  # noqa: BLE001
            row = {"problem": os.path.basename(path), "error": "%s: %s" % (type(e).__name__, e)}
        rows.append(row)
        if "error" in row:
            print("%s: failed: %s" % (row["problem"], row["error"]), flush=True)
        else:
            print("%s: %.1f s (%.2f GB; get_inputs %.1f s, to the GPU %.1f s, reference %.2f s, "
                  "eager x%d %.1f s: %.3f ms)" % (
                      row["problem"], row["wall_s"], row["bytes"] / 1e9, row["get_inputs_s"],
                      row["to_gpu_s"], row["reference_s"], args.iters, row["timing_s"],
                      row["eager_ms"]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
