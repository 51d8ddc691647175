"""How kopt's Python worker draws and summarizes a tensor on the GPU, under several step rules:
the time of each and the memory its temporaries take beside the tensor.

  python3 bench/draw_steps.py [--sizes 4M,16M,64M,256M,1G] [--dtype f32]

Each rule is a function of the tensor's elements n giving the elements of a step, and a way of
drawing a step: torch's operations (about 100 launches a step, the CPU's way and the fallback)
or, on CUDA, one jitted kernel (the worker's own way there, with its own rule, five_percent_step).
Prints one line per (size, rule): milliseconds to draw and to summarize, and on a GPU the peak
bytes torch allocated beyond the tensor itself, as a share of the tensor's bytes. Then, on a
GPU, whether the kernel's bytes are the torch operations' for every kind and some dtypes.
"""
import argparse
import functools
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kopt_worker_draw as worker  # noqa: E402 (the worker's parts, beside its script)
import kopt_worker_tensors as tensors  # noqa: E402

# name: (the draw's rule, whether one jitted kernel a step draws (on CUDA), else torch's operations)
RULES = {
    "ops, 16M a step (before 0e31402)": (lambda n, most: max(1, min(most, n)), False),
    "ops, 256 steps (0e31402)": (worker.draw_chunk, False),
    "ops, max(4M, n/32)": (lambda n, most: max(1, min(most, max(1 << 22, n >> 5))), False),
    "one kernel a step (5 % rule)": (worker.draw_chunk, True),
}


def size(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * scale[text[-1]] if text[-1] in scale else int(text)


def timed(fn, dev):
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return out, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4M,16M,64M,256M,1G")
    p.add_argument("--dtype", default="f32")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    recipe = {"kind": "normal", "a": 0.0, "b": 1.0, "key": 12345}
    print("device: %s, torch %s" % (torch.cuda.get_device_name() if dev.type == "cuda" else "the CPU",
                                    torch.__version__))
    if dev.type == "cuda":
        t0 = time.perf_counter()
        made = worker._fused_fn() is not None
        print("the jitted draw: %s, %.0f ms (the first in a process)" % (
            "compiled" if made else worker._fused.get("failed"), (time.perf_counter() - t0) * 1e3))
    print("%-6s %-34s %10s %10s %8s %14s" % ("n", "rule", "draw ms", "summ. ms", "steps", "temporaries"))
    for text in a.sizes.split(","):
        n = size(text)
        for name, rule in RULES.items():
            worker.draw_chunk, fused = rule
            worker._fused.clear()
            if not fused:
                worker._fused["failed"] = "bench/draw_steps.py: the torch operations"
            elif dev.type == "cuda":
                worker._fused_fn()  # compiled (in memory) before timing: it draws every size
            best_draw = best_sum = float("inf")
            peak = None  # torch counts the device's allocations only
            for _ in range(a.repeat):
                if dev.type == "cuda":
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                x, t_draw = timed(lambda: worker._draw_tensor(recipe, a.dtype, (n,), dev), dev)
                tensor_bytes = x.numel() * x.element_size()
                t_sum = timed(functools.partial(tensors.summarize, x), dev)[1]
                if dev.type == "cuda":
                    peak = max(peak or 0, torch.cuda.max_memory_allocated() - base - tensor_bytes)
                best_draw, best_sum = min(best_draw, t_draw), min(best_sum, t_sum)
                del x
            on = dev.type == "cuda" and worker._fused_fn() is not None
            step = (worker.five_percent_step(n, tensor_bytes // n, worker.FUSED_TEMP_BYTES, worker.DRAW_CHUNK) if on
                    else rule[0](n, worker.DRAW_CHUNK))
            steps = -(-n // step)
            held = "not counted" if peak is None else "%.0f MiB %4.0f %%" % (peak / 2**20, 100.0 * peak / tensor_bytes)
            print("%-6s %-34s %10.1f %10.1f %8d %14s" % (text, name, best_draw * 1e3, best_sum * 1e3, steps, held))
            sys.stdout.flush()
    if dev.type == "cuda":
        same_bytes(dev, (1 << 26) + 12345)  # several steps, the last one short


def same_bytes(dev, n):
    """The kernel's bytes against the torch operations' (which kopt's tests hold to the C++'s)."""
    worker._fused.clear()
    if worker._fused_fn() is None:
        print("no jitted draw here:", worker._fused.get("failed"))
        return
    for kind, lo, hi in (("normal", 0.5, 2.0), ("uniform", -3.0, 7.0), ("randint", -300.0, 300.0),
                         ("arange", 1.0, 0.5), ("constant", 3.25, 0.0)):
        for dtype in ("f64", "f32", "bf16", "i32", "u8"):
            recipe = {"kind": kind, "a": lo, "b": hi, "key": -123456789}
            worker._fused.clear()
            worker._fused_fn()
            fused = worker._draw_tensor(recipe, dtype, (n,), dev)
            worker._fused["failed"] = "the torch operations"
            ops = worker._draw_tensor(recipe, dtype, (n,), dev)
            same = torch.equal(fused.view(torch.uint8), ops.view(torch.uint8))
            print("same bytes, %s %s, %d elements: %s" % (kind, dtype, n, "yes" if same else "NO"))
            del fused, ops
    worker._fused.clear()


if __name__ == "__main__":
    main()
