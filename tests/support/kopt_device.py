"""What the Python tests that drive kopt (tests/ray, tests/mcp) ask before they run: whether kopt
sees a device of the backend they test, as `kopt env --json` reports it."""

import json
import subprocess


def missing_device(kopt, env, backend):
    """Why the backend's device is missing here (a skip reason), or None when kopt sees one."""
    probe = json.loads(subprocess.run([kopt, "env", "--json", "--no-ncu-probe"], env=env, capture_output=True,
                                      text=True).stdout)
    if backend == "opencl" and not probe.get("opencl", {}).get("devices"):
        return "no OpenCL device (PoCL) here"
    if backend == "cuda" and not [g for g in probe.get("gpus", []) if "error" not in g]:
        return "no CUDA GPU here"
    return None
