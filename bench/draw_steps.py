"""How kopt's Python worker draws and summarizes a tensor on the GPU, under several step rules:
the time of each and the memory its temporaries take beside the tensor.

  python3 bench/draw_steps.py [--sizes 4M,16M,64M,256M,1G] [--dtype f32]

Each rule is a function of the tensor's elements n giving the elements of a step. The worker's
own rule (draw_chunk) is one of them; the others are the rules it had and two it could have,
side by side. Prints one line per (size, rule): milliseconds to draw and to summarize, and on a
GPU the peak bytes torch allocated beyond the tensor itself, as a share of the tensor's bytes.
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

RULES = {
    "16M a step (before 0e31402)": lambda n, most: max(1, min(most, n)),
    "256 steps (0e31402)": lambda n, most: max(1, min(most, max(1 << 16, n >> 8))),
    "max(2M, n/160)": lambda n, most: max(1, min(most, max(1 << 21, n // 160))),
    "max(4M, n/32)": lambda n, most: max(1, min(most, max(1 << 22, n >> 5))),
    "the worker's draw_chunk": worker.draw_chunk,  # taken before any rule replaces it
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
    print("%-6s %-34s %10s %10s %8s %14s" % ("n", "rule", "draw ms", "summ. ms", "steps", "temporaries"))
    for text in a.sizes.split(","):
        n = size(text)
        for name, rule in RULES.items():
            worker.draw_chunk = tensors.draw_chunk = rule  # the draw's and the summary's
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
            steps = -(-n // rule(n, worker.DRAW_CHUNK))
            held = "not counted" if peak is None else "%.0f MiB %4.0f %%" % (peak / 2**20, 100.0 * peak / tensor_bytes)
            print("%-6s %-34s %10.1f %10.1f %8d %14s" % (text, name, best_draw * 1e3, best_sum * 1e3, steps, held))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
