"""configs/min of `kopt tune` on a Ray cluster of one node against two, beside the same tune
with local workers (--gpus), on this host's CPU through PoCL.

  PYTHONPATH=.tools/ray python3 bench/ray_scaling.py [path/to/kopt] [problem] [budget]

Each node offers one OpenCL device (resource kopt_opencl) and PoCL runs one thread per
device (POCL_MAX_PTHREAD_COUNT=1, set before the nodes start), so one device is one core and
two nodes have two: the ratio is how much of a second device the dispatcher turns into
throughput, Ray's relay included. A CPU stands in for GPUs here; the ratio, not the
configs/min, is what carries over. Every tune runs the whole space, exhaustive, on a fresh
kopt cache, as a new user would. Prints one line per run and the ratios.
"""

import json
import os
import subprocess
import sys
import tempfile
import time


def tune(kopt, problem, budget, extra, env):
    cache = tempfile.mkdtemp(prefix="kopt-bench-cache-")
    e = dict(env, KOPT_CACHE_DIR=cache, KOPT_BACKEND="opencl")
    t0 = time.time()
    r = subprocess.run([kopt, "tune", problem, "--strategy", "exhaustive", "--budget", str(budget), "--max-time", "0.3",
                        "--json", *extra], env=e, capture_output=True, text=True, timeout=1800)
    wall = time.time() - t0
    if r.returncode != 0:
        sys.exit("kopt tune %s failed (%d): %s" % (" ".join(extra), r.returncode, r.stderr[-2000:]))
    j = json.loads(r.stdout)
    return {"configs_per_min": j["configs_per_min"], "wall_s": wall, "evaluations": len(j["search"]["history"]),
            "devices": len(j["gpus"]), "champion": j["champion"]["point"] if j["champion"] else None,
            "screening_s": sum(j["times"]["screening"].values()), "confirmation_s": sum(j["times"]["confirmation"].values()),
            "setup_s": j["times"]["setup_s"], "final_comparison_s": j["times"]["final_comparison_s"]}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    kopt = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "kopt")
    problem = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "examples", "softmax")
    budget = int(sys.argv[3]) if len(sys.argv) > 3 else 24
    os.environ["POCL_MAX_PTHREAD_COUNT"] = "1"  # before the nodes start: their workers inherit it
    from ray.cluster_utils import Cluster

    results = {}
    env = dict(os.environ)
    results["local, 1 device (--gpus 0)"] = tune(kopt, problem, budget, ["--gpus", "0"],
                                                 dict(env, POCL_DEVICES="pthread pthread"))
    results["local, 2 devices (--gpus all)"] = tune(kopt, problem, budget, ["--gpus", "all"],
                                                    dict(env, POCL_DEVICES="pthread pthread"))
    for n in (1, 2):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 80 << 20})
        for _ in range(n):
            cluster.add_node(num_cpus=1, resources={"kopt_opencl": 1}, object_store_memory=80 << 20)
        try:
            results["Ray, %d node(s)" % n] = tune(kopt, problem, budget, ["--cluster", "ray:" + cluster.address], env)
        finally:
            cluster.shutdown()
    for name, r in results.items():
        print("%-32s %6.1f configs/min  %5.1f s wall (screening %4.1f, confirmation %4.1f, comparison %4.1f, set-up %4.1f)"
              "  %d evaluations on %d device(s)  champion %s" % (
                  name, r["configs_per_min"], r["wall_s"], r["screening_s"], r["confirmation_s"],
                  r["final_comparison_s"], r["setup_s"], r["evaluations"], r["devices"], r["champion"]))
    one, two = results["Ray, 1 node(s)"], results["Ray, 2 node(s)"]
    l1, l2 = results["local, 1 device (--gpus 0)"], results["local, 2 devices (--gpus all)"]
    print("Ray: 2 nodes / 1 node = %.2fx configs/min; local: 2 devices / 1 = %.2fx; Ray 1 node / local 1 device = %.2f"
          % (two["configs_per_min"] / one["configs_per_min"], l2["configs_per_min"] / l1["configs_per_min"],
             one["configs_per_min"] / l1["configs_per_min"]))
    print("screening alone (the part split over devices): Ray 2 nodes / 1 = %.2fx; local 2 / 1 = %.2fx"
          % (one["screening_s"] / two["screening_s"], l1["screening_s"] / l2["screening_s"]))


if __name__ == "__main__":
    main()
