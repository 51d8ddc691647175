"""N Python processes that each need torch and a CUDA context, started at once: what each
waits for, two ways, in one run.

  spawn  N fresh interpreters, each imports torch and makes its context (what `kopt import
         kernelbench --jobs N` did: one import process per thread);
  fork   one interpreter imports torch, with no CUDA call, and forks N children, each of which
         makes its own context (a fork server).

Each child's time runs from the moment it was asked for to its context made; the fork's
includes the parent's import, which all N wait for.
  python3 bench/python_starts.py [N]
"""
import json
import os
import subprocess
import sys
import time

CHILD = ("import time; t = time.perf_counter(); import torch; torch.zeros(1, device='cuda'); "
         "torch.cuda.synchronize(); print(time.perf_counter() - t)")


def spawn(n):
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
             for _ in range(n)]
    own = [float(p.communicate()[0].strip() or "nan") for p in procs]
    return {"wall_s": time.perf_counter() - t0, "own_s": own}


def fork(n):
    t0 = time.perf_counter()
    r, w = os.pipe()
    parent = os.fork()
    if parent == 0:  # the server: torch imported once, then N children
        os.close(r)
        import torch  # noqa: F401  (no CUDA call before the forks)
        kids = []
        for _ in range(n):
            pid = os.fork()
            if pid == 0:
                torch.zeros(1, device="cuda")
                torch.cuda.synchronize()
                os.write(w, ("%f\n" % (time.perf_counter() - t0)).encode())
                os._exit(0)
            kids.append(pid)
        for pid in kids:
            os.waitpid(pid, 0)
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        data += chunk
    os.waitpid(parent, 0)
    return {"wall_s": time.perf_counter() - t0, "own_s": [float(x) for x in data.split()]}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for name, how in (("spawn", spawn), ("fork", fork), ("spawn", spawn), ("fork", fork)):
        r = how(n)
        own = sorted(r["own_s"])
        print(json.dumps({"how": name, "n": n, "wall_s": round(r["wall_s"], 2),
                          "median_s": round(own[len(own) // 2], 2), "max_s": round(own[-1], 2)}))


if __name__ == "__main__":
    main()
