"""kopt on a Ray cluster of several nodes on the loopback address, each node's worker on PoCL.

  python3 cluster_test.py KOPT_BINARY SOURCE_DIR [opencl|cuda]

CTest runs it (label ray) on PoCL; scripts/device-ray runs it with cuda on a GPU machine, where
each node holds the one GPU (num_gpus=1): two workers on one GPU, which proves the CUDA path
and the dispatch, not any timing. Three cases, each a kopt command run as a user runs it:
  1. tune and bench --cluster ray:ADDRESS over two nodes, files shipped by content hash
     (KOPT_RAY_SHIP=always: the nodes share this host's disk, so shipping is forced to be tested);
  2. optimize over two nodes, one node removed in the middle: its candidate is measured
     again on the other node, the run ends normally and every branch has its record;
  3. optimize killed (SIGKILL) in the middle, then --resume on the cluster: it finishes.
Exit 77 (skipped) when Ray or the device is missing.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from kopt_device import missing_device  # noqa: E402

SKIP = 77
NODE_ARGS = {}
# On PoCL, softmax at a sixteenth of its size (4 MiB tensors): its 2048 x 4096 took 50-80 ms a
# launch on a 2-core host, and this test proves the dispatch, not a timing.
DIMS = []


def main():
    kopt, source = sys.argv[1], sys.argv[2]
    backend = sys.argv[3] if len(sys.argv) > 3 else "opencl"
    try:
        import ray  # noqa: F401
        from ray.cluster_utils import Cluster
    except ImportError:
        print("[  SKIPPED ] Ray is not installed (scripts/bootstrap --ray installs it into .tools/ray)")
        return SKIP
    cache = tempfile.mkdtemp(prefix="kopt-ray-test-cache-")
    env = dict(os.environ, KOPT_CACHE_DIR=cache, KOPT_BACKEND=backend)
    env.pop("KOPT_RAY_SHIP", None)
    missing = missing_device(kopt, env, backend)
    if missing:
        print("[  SKIPPED ] " + missing)
        return SKIP
    global NODE_ARGS, DIMS
    NODE_ARGS = {"num_gpus": 1} if backend == "cuda" else {"resources": {"kopt_opencl": 1}}
    DIMS = [] if backend == "cuda" else ["--dim", "rows=512", "--dim", "cols=2048"]

    store = 80 * 1024 * 1024
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": store})
    nodes = [cluster.add_node(num_cpus=1, object_store_memory=store, **NODE_ARGS) for _ in range(2)]
    address = cluster.address
    print("cluster at", address, "nodes", [n.node_id[:8] for n in nodes], flush=True)
    failures = []
    try:
        tune_over_two_nodes(kopt, source, env, address, failures)
        optimize_losing_a_node(kopt, source, env, cluster, nodes, failures)
        optimize_killed_and_resumed(kopt, source, env, address, failures)
    finally:
        cluster.shutdown()
    for f in failures:
        print("FAILED:", f)
    print("[  PASSED  ]" if not failures else "[  FAILED  ]", 4 - len(set(f.split(":")[0] for f in failures)), "of 4")
    return 1 if failures else 0


def check(cond, failures, case, what):
    if not cond:
        failures.append(case + ": " + what)
    return cond


def tune_over_two_nodes(kopt, source, env, address, failures):
    case = "tune"
    e = dict(env, KOPT_RAY_SHIP="always")
    r = subprocess.run([kopt, "tune", os.path.join(source, "examples/softmax"), *DIMS, "--cluster", "ray:" + address,
                        "--strategy", "exhaustive", "--budget", "12", "--max-time", "0.3", "--json"],
                       env=e, capture_output=True, text=True, timeout=600)
    print(r.stderr[-2000:], flush=True)
    if not check(r.returncode == 0, failures, case, "exit %d" % r.returncode):
        return
    j = json.loads(r.stdout)
    check(len(j["gpus"]) == 2, failures, case, "two devices, got %d" % len(j["gpus"]))
    check(all(g.get("host", "").startswith("node ") for g in j["gpus"]), failures, case,
          "each device names its Ray node: %s" % [g.get("host") for g in j["gpus"]])
    on = {ev.get("gpu") for ev in j["search"]["history"]}
    check(on == {0, 1}, failures, case, "screened on both workers, got %s" % on)
    check(j["champion"] is not None, failures, case, "a confirmed champion")
    check(len(j["search"]["history"]) == 12, failures, case, "12 evaluations")
    print("tune: ok, %s configs/min" % round(j["configs_per_min"]), flush=True)
    case = "bench"
    r = subprocess.run([kopt, "bench", os.path.join(source, "examples/softmax"), *DIMS, "--cluster", "ray:" + address,
                        "--max-time", "0.3", "--json"], env=e, capture_output=True, text=True, timeout=600)
    if not check(r.returncode == 0, failures, case, "exit %d: %s" % (r.returncode, r.stderr[-1500:])):
        return
    j = json.loads(r.stdout)
    nodes = {v.get("device", "").split(" on ")[1].split(" ")[1] for v in j["variants"] if " on node " in v.get("device", "")}
    check(len(nodes) == 2, failures, case, "variants measured on both nodes: %s" % [v.get("device") for v in j["variants"]])
    print("bench: ok, variants on nodes %s" % sorted(nodes), flush=True)


def start_optimize(kopt, source, env, address, run, extra=()):
    return subprocess.Popen([kopt, "optimize", os.path.join(source, "examples/softmax"), *DIMS, "--cluster", "ray:" + address,
                             "--run", run, "--iterations", "3", "--branches", "4", "--patience", "3",
                             "--max-time", "0.3", "--no-experience", "--no-sanitize", "-v", *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_line(proc, pattern, log, timeout):
    """Reads the process's stderr until a line matches; returns the match (None at EOF)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            return None
        log.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    return None


def branches_recorded(run):
    """Every branch directory of every version has its bench.json with a status."""
    missing = []
    for root, dirs, files in os.walk(run):
        if os.path.basename(os.path.dirname(root)) == "branches" and "bench.json" not in files:
            missing.append(root)
    return missing


def optimize_losing_a_node(kopt, source, env, cluster, nodes, failures):
    case = "optimize-node-lost"
    run = tempfile.mkdtemp(prefix="kopt-ray-run-")
    proc = start_optimize(kopt, source, env, cluster.address, run)
    log = []
    # Worker 1's node goes as soon as the run has placed its workers: its first task is lost.
    m = wait_for_line(proc, r"worker 1: device \d+ on node ([0-9a-f]{8})", log, 400)
    if not check(m is not None, failures, case, "worker 1 placed on a node: " + "".join(log)[-1500:]):
        proc.kill()
        return
    victim = [n for n in nodes if n.node_id.startswith(m.group(1))]
    check(len(victim) == 1, failures, case, "worker 1's node among the cluster's")
    print("removing node", m.group(1), "(worker 1's)", flush=True)
    cluster.remove_node(victim[0], allow_graceful=False)
    nodes.remove(victim[0])
    out, err = proc.communicate(timeout=900)
    log.append(err)
    text = "".join(log)
    print(text[-3000:], flush=True)
    check(proc.returncode == 0, failures, case, "exit %s" % proc.returncode)
    check("worker 1 lost" in text, failures, case, "the lost worker is reported")
    state = json.load(open(os.path.join(run, "run.json")))
    check(len(state["versions"]) >= 2, failures, case, "at least one iteration after v0")
    check(not branches_recorded(run), failures, case, "branches without a record: %s" % branches_recorded(run))
    bad = [e for e in state.get("evaluations", {}).values() if "no live worker" in e.get("error", "")]
    check(not bad, failures, case, "a candidate given up although a worker was live: %s" % bad)
    # The node that is left measures what comes next.
    nodes.append(cluster.add_node(num_cpus=1, object_store_memory=80 << 20, **NODE_ARGS))


def optimize_killed_and_resumed(kopt, source, env, address, failures):
    case = "optimize-killed"
    run = tempfile.mkdtemp(prefix="kopt-ray-run-")
    proc = start_optimize(kopt, source, env, address, run)
    log = []
    m = wait_for_line(proc, r"\(worker [01] \(device \d+ on node", log, 400)
    if not check(m is not None, failures, case, "a measurement on the cluster: " + "".join(log)[-1500:]):
        proc.kill()
        return
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    measured = len(json.load(open(os.path.join(run, "run.json"))).get("evaluations", {}))
    r = start_optimize(kopt, source, env, address, run, ["--resume"])
    out, err = r.communicate(timeout=900)
    print(err[-2000:], flush=True)
    check(r.returncode == 0, failures, case, "the resumed run exits %s" % r.returncode)
    state = json.load(open(os.path.join(run, "run.json")))
    check(len(state.get("evaluations", {})) >= measured, failures, case, "what was measured before the kill is kept")
    check(state.get("versions") and state["versions"][0]["outcome"] == "baseline", failures, case, "v0 kept")


if __name__ == "__main__":
    sys.exit(main())
