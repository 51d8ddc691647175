"""kopt's workers on a Ray cluster (kopt tune|optimize --cluster ray[:ADDRESS]).

kopt (C++) stays the orchestrator and the single writer of its run directory. For each device
of the cluster it starts `relay`, which speaks kopt's JSON-lines worker protocol on
stdin/stdout exactly as `kopt worker` does, and forwards every request to a Ray actor pinned
to that device's node. The actor runs `kopt worker` there. So a worker on another host is,
to kopt, a worker process like any other: a dead node is a dead worker.

  head   --site DIR [--opencl-devices N]       starts a local Ray instance; prints its address;
                                              ends it when stdin closes
  slots  --address A --backend cuda|opencl    one line of JSON: the devices (node, ordinal)
  relay  --address A --node ID --ordinal K --backend B --kopt PATH [--ship auto|always]
(before the command: --site DIR, where Ray is installed; --auth token, for kopt's own instance)

Files travel by content hash when the actor's node does not share this host's file system
(or --ship always): inputs, references, modules and include directories are sent once per
node and kept in its cache; outputs come back to the paths kopt named.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid

RESOURCE_OPENCL = "kopt_opencl"  # a node's OpenCL devices: ray start --resources '{"kopt_opencl": N}'
IN_KEYS = ("module_path", "input_path", "expected_path", "secret_input_path", "secret_expected_path",
           "source_path")
OUT_KEYS = ("output_path",)


def use_site(site):
    """Ray from the directory kopt's setup installed it into; exported so that the processes
    Ray starts (raylets, workers) find it too."""
    if site and os.path.isdir(site):
        sys.path.insert(0, site)
        os.environ["PYTHONPATH"] = site + (os.pathsep + os.environ["PYTHONPATH"]
                                           if os.environ.get("PYTHONPATH") else "")


def protocol_stdout():
    """stdout carries protocol lines only: whatever else writes to fd 1 (Ray's own messages,
    a library's print) goes to stderr, which kopt keeps as the worker's log."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def die(message, code=1):
    sys.stderr.write("kopt ray: " + message + "\n")
    sys.stderr.flush()
    os._exit(code)


def auth_mode(args):
    """kopt's own local instance (head) is started the way ray.init() starts one: with token
    authentication, its token in ~/.ray/auth_token; kopt says so (--auth token) to the drivers
    that connect to it. For a user's cluster, the user's RAY_AUTH_MODE decides, as for any
    Ray driver. Read by Ray when it is imported."""
    if getattr(args, "auth", "") and "RAY_AUTH_MODE" not in os.environ:
        os.environ["RAY_AUTH_MODE"] = args.auth


def connect(address):
    import ray
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    except Exception as e:  # unreachable, another Ray or Python version, authentication
        hint = ""
        if "auth" in str(e).lower() and "RAY_AUTH_MODE" not in os.environ:
            hint = " (a cluster with token authentication: set RAY_AUTH_MODE=token and its token, as for any Ray driver)"
        die("cannot connect to the Ray cluster at %s (%s, Ray %s): %s%s" % (
            address, sys.executable, ray.__version__, " ".join(str(e).split())[:600], hint), 3)
    return ray


def cmd_head(args):
    import ray
    resources = {RESOURCE_OPENCL: args.opencl_devices} if args.opencl_devices else None
    ray.init(resources=resources, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    out = protocol_stdout()
    out.write(json.dumps({"address": ray.get_runtime_context().gcs_address}) + "\n")
    out.flush()
    sys.stdin.read()  # kopt closes it when the command ends
    ray.shutdown()


def cmd_slots(args):
    out = protocol_stdout()
    ray = connect(args.address)
    key = "GPU" if args.backend == "cuda" else RESOURCE_OPENCL
    slots = []
    for n in sorted(ray.nodes(), key=lambda n: (n.get("NodeManagerAddress", ""), n["NodeID"])):
        if not n.get("Alive"):
            continue
        for k in range(int(n.get("Resources", {}).get(key, 0))):
            slots.append({"node": n["NodeID"], "ip": n.get("NodeManagerAddress", ""),
                          "host": n.get("NodeManagerHostname", ""), "ordinal": k})
    out.write(json.dumps({"resource": key, "slots": slots}) + "\n")
    out.flush()


class KoptWorkerActor:
    """Runs `kopt worker` on its node and passes it one request line at a time."""

    def __init__(self, backend, ordinal):
        self.backend, self.ordinal = backend, ordinal
        self.root = os.path.join(tempfile.gettempdir(), "kopt-ray-%d" % os.getuid())
        os.makedirs(os.path.join(self.root, "files"), exist_ok=True)
        self.proc = None
        self.log_path = os.path.join(self.root, "worker-%s.log" % uuid.uuid4().hex[:8])

    def where(self, token_path, token):
        import ray
        try:
            with open(token_path) as f:
                shared = f.read() == token
        except OSError:
            shared = False
        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "shared_fs": shared, "pid": os.getpid()}

    def missing(self, hashes):
        return [h for h in hashes if not os.path.isdir(os.path.join(self.root, "files", h))]

    def put(self, blobs):
        for h, (name, data, mode) in blobs.items():
            d = os.path.join(self.root, "files", h)
            tmp = d + ".tmp-" + uuid.uuid4().hex[:8]
            os.makedirs(tmp, exist_ok=True)
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(tmp, name), mode)
            try:
                os.rename(tmp, d)
            except OSError:  # another actor of this node put it first
                shutil.rmtree(tmp, ignore_errors=True)

    def root_dir(self):
        return self.root

    def cached_path(self, h, name):
        return os.path.join(self.root, "files", h, name)

    def assemble(self, key, entries):
        """A directory of cached files at their relative paths (an include directory)."""
        d = os.path.join(self.root, "dirs", key)
        if os.path.isdir(d):
            return d
        tmp = d + ".tmp-" + uuid.uuid4().hex[:8]
        for h, name, rel in entries:
            dest = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            os.link(self.cached_path(h, name), dest)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        try:
            os.rename(tmp, d)
        except OSError:  # another actor of this node assembled it first
            shutil.rmtree(tmp, ignore_errors=True)
        return d

    def start(self, kopt):
        if self.proc and self.proc.poll() is None:
            return True
        if not os.path.exists(kopt):
            return False

        def child_setup():  # the worker dies with its actor
            try:
                import ctypes
                ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            except Exception:
                pass
        env = dict(os.environ)
        # Ray's GPU assignment already narrowed CUDA_VISIBLE_DEVICES to this actor's GPU.
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([kopt, "worker", "--device", str(self.ordinal), "--backend", self.backend],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env,
                                     preexec_fn=child_setup)
        return True

    def log_tail(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-600:].decode(errors="replace")
        except OSError:
            return ""

    def request(self, line, outputs):
        """One request line in, the reply line out, with the output files it wrote."""
        if self.proc is None or self.proc.poll() is not None:
            return None, {}, "the kopt worker on this node is not running; its last words: " + self.log_tail()
        for p in outputs:
            os.makedirs(os.path.dirname(p), exist_ok=True)
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            code = self.proc.wait()
            return None, {}, "the kopt worker on this node died (exit %s); its last words: %s" % (code, self.log_tail())
        files = {}
        for p in outputs:
            if os.path.exists(p):
                with open(p, "rb") as f:
                    files[p] = f.read()
                os.unlink(p)
        return reply.decode(), files, ""


class Shipper:
    """Moves a request's files to the actor's node by content hash, and its outputs back."""

    def __init__(self, ray, actor):
        self.ray, self.actor = ray, actor
        self.root = ray.get(actor.root_dir.remote())
        self.sent = set()
        self.hashes = {}  # (path, size, mtime_ns) -> sha256

    def digest(self, path):
        st = os.stat(path)
        key = (path, st.st_size, st.st_mtime_ns)
        if key not in self.hashes:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            self.hashes[key] = h.hexdigest()
        return self.hashes[key], st.st_mode & 0o777

    def localize(self, req):
        """The request with the node's paths in it; the node paths of its outputs, and where
        each goes back to here."""
        blobs, outputs, back, dirs = {}, [], {}, []

        def ship_file(path):
            digest, mode = self.digest(path)
            name = os.path.basename(path)
            h = digest[:48] + "-" + name  # one copy per content and name: a name may matter to its reader
            if h not in self.sent:
                blobs[h] = (name, path, mode)
            return os.path.join(self.root, "files", h, name), h, name

        def ship_dir(d):
            # An include directory (the problem's headers): its files, assembled on the node.
            entries = []
            for root, _, names in os.walk(d):
                for n in sorted(names):
                    p = os.path.join(root, n)
                    if os.path.isfile(p) and os.path.getsize(p) <= (4 << 20) and len(entries) < 256:
                        _, h, name = ship_file(p)
                        entries.append((h, name, os.path.relpath(p, d)))
            key = hashlib.sha256(json.dumps(entries).encode()).hexdigest()
            dirs.append((key, entries))
            return os.path.join(self.root, "dirs", key)

        def walk(j, top):
            if isinstance(j, dict):
                for k, v in list(j.items()):
                    if isinstance(v, str) and v and k in IN_KEYS and os.path.isfile(v):
                        j[k] = ship_file(v)[0]
                    elif isinstance(v, str) and v and (k in OUT_KEYS or (top and k == "path")):
                        node = os.path.join(self.root, "out", uuid.uuid4().hex, os.path.basename(v))
                        outputs.append(node)
                        back[node] = v
                        j[k] = node
                    elif k == "include_dirs" and isinstance(v, list):
                        j[k] = [ship_dir(d) if os.path.isdir(d) else d for d in v]
                    else:
                        walk(v, False)
            elif isinstance(j, list):
                for v in j:
                    walk(v, False)

        walk(req, True)
        if blobs:
            missing = set(self.ray.get(self.actor.missing.remote(list(blobs))))
            payload = {}
            for h, (name, path, mode) in blobs.items():
                if h in missing:
                    with open(path, "rb") as f:
                        payload[h] = (name, f.read(), mode)
            if payload:
                self.ray.get(self.actor.put.remote(payload))
            self.sent.update(blobs)
        for key, entries in dirs:
            self.ray.get(self.actor.assemble.remote(key, entries))
        return req, outputs, back


def cmd_relay(args):
    out = protocol_stdout()
    ray = connect(args.address)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    alive = [n for n in ray.nodes() if n["NodeID"] == args.node and n.get("Alive")]
    if not alive:
        die("node %s is not alive in the Ray cluster at %s" % (args.node[:12], args.address), 3)
    opts = {"scheduling_strategy": NodeAffinitySchedulingStrategy(args.node, soft=False), "num_cpus": 0,
            "max_restarts": 0}
    if args.backend == "cuda":
        opts["num_gpus"] = 1
    else:
        opts["resources"] = {RESOURCE_OPENCL: 1}
    actor = ray.remote(KoptWorkerActor).options(**opts).remote(args.backend, 0 if args.backend == "cuda" else args.ordinal)
    token_dir = tempfile.mkdtemp(prefix="kopt-ray-token-")
    token = uuid.uuid4().hex
    with open(os.path.join(token_dir, "token"), "w") as f:
        f.write(token)
    try:
        where = ray.get(actor.where.remote(os.path.join(token_dir, "token"), token), timeout=args.start_timeout)
    except Exception as e:  # the node died, or the actor could not be placed
        die("no actor on node %s: %s" % (args.node[:12], str(e).splitlines()[0] if str(e) else type(e).__name__), 3)
    ship = args.ship == "always" or not where["shared_fs"]
    host = "node %s on %s" % (where["node"][:8], where["host"])
    shipper = Shipper(ray, actor) if ship else None
    kopt = args.kopt
    if not ray.get(actor.start.remote(kopt)):
        if not ship:
            die("%s: %s does not exist there" % (host, kopt), 3)
        digest, mode = shipper.digest(kopt)
        h = digest[:48] + "-kopt"
        if h in ray.get(actor.missing.remote([h])):
            with open(kopt, "rb") as f:
                ray.get(actor.put.remote({h: ("kopt", f.read(), mode)}))
        if not ray.get(actor.start.remote(ray.get(actor.cached_path.remote(h, "kopt")))):
            die("%s: could not start the kopt it was sent" % host, 3)
    sys.stderr.write("kopt ray: worker on %s, device %d%s\n" % (host, args.ordinal, ", files shipped" if ship else ""))
    sys.stderr.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        outputs, back = [], {}
        if shipper:
            req, outputs, back = shipper.localize(req)
        try:
            reply, files, failure = ray.get(actor.request.remote(json.dumps(req), outputs))
        except Exception as e:  # RayActorError: the node or the actor died
            die("the actor on %s died: %s" % (host, str(e).splitlines()[0] if str(e) else type(e).__name__))
        if failure:
            die(failure)
        for node_path, data in files.items():
            dest = back[node_path]
            os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
            tmp = dest + ".tmp-" + uuid.uuid4().hex[:8]
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, dest)
        msg = json.loads(reply)
        if req.get("op") == "device_info" and isinstance(msg.get("device"), dict):
            msg["device"]["host"] = host
            msg["device"]["machine"] = where["host"]  # several nodes may share one machine
        if req.get("op") == "compile" and isinstance(msg.get("build"), dict) and msg["build"].get("cubin_path") in back:
            msg["build"]["cubin_path"] = back[msg["build"]["cubin_path"]]
        out.write(json.dumps(msg) + "\n")
        out.flush()
        result = msg.get("result") if isinstance(msg.get("result"), dict) else {}
        if req.get("op") == "shutdown" or result.get("fatal"):
            break  # as `kopt worker` does: a fatal result ends the worker; kopt starts a new one
    ray.shutdown()


def main():
    p = argparse.ArgumentParser(prog="kopt_ray")
    p.add_argument("--site", default="")
    p.add_argument("--auth", default="", help="RAY_AUTH_MODE for a cluster kopt started itself")
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("head")
    h.add_argument("--opencl-devices", type=int, default=0)
    s = sub.add_parser("slots")
    s.add_argument("--address", required=True)
    s.add_argument("--backend", choices=["cuda", "opencl"], required=True)
    r = sub.add_parser("relay")
    r.add_argument("--address", required=True)
    r.add_argument("--node", required=True)
    r.add_argument("--ordinal", type=int, default=0)
    r.add_argument("--backend", choices=["cuda", "opencl"], required=True)
    r.add_argument("--kopt", required=True)
    r.add_argument("--ship", choices=["auto", "always"], default="auto")
    r.add_argument("--start-timeout", type=float, default=50)
    args = p.parse_args()
    use_site(args.site)
    auth_mode(args)  # before Ray is imported: it reads the mode then
    try:
        import ray  # noqa: F401
    except ImportError:
        die("Ray is not installed for %s (scripts/bootstrap --ray installs it; or pip install ray)" % sys.executable, 3)
    {"head": cmd_head, "slots": cmd_slots, "relay": cmd_relay}[args.cmd](args)


if __name__ == "__main__":
    main()

