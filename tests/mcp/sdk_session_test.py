"""kopt's MCP server driven by the official MCP Python SDK (PyPI `mcp`) as an agent drives it.

  python3 sdk_session_test.py KOPT_BINARY SOURCE_DIR [opencl|cuda] [SUMMARY_JSON]

CTest runs it (label mcp) on PoCL; scripts/device-mcp runs it with cuda on a GPU machine.
One session (`kopt mcp` started by the SDK's stdio client, a fresh cache):
  1. tools/list: every command an agent needs is a tool with an input schema (every option of
     the command, the device family too) and an output schema;
  2. check with seeds, a dim and the kernel chosen: a structured result the SDK validates
     against the tool's output schema, the same document `kopt check --json` prints;
  3. bad arguments: a tool error the agent can read, and the session goes on;
  4. a whole optimize, with progress notifications carrying its log lines and a structured
     result (the run state);
  5. an optimize cancelled in the middle: the SDK sends notifications/cancelled, the command
     and its workers are gone within seconds, the session answers the next call, and the
     stopped run resumes to its end (resume=true).
Exit 77 (skipped) when the SDK or the device is missing; SUMMARY_JSON gets what was measured.
"""

import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from kopt_device import missing_device  # noqa: E402

SKIP = 77


def main():
    kopt, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    backend = sys.argv[3] if len(sys.argv) > 3 else "opencl"
    summary_file = sys.argv[4] if len(sys.argv) > 4 else None
    try:
        import anyio
        from mcp import Client, MCPError, StdioServerParameters
    except ImportError as e:
        print("[  SKIPPED ] the MCP SDK is not installed (scripts/bootstrap --mcp installs it into .tools/mcp): %s" % e)
        return SKIP
    work = tempfile.mkdtemp(prefix="kopt-mcp-sdk-")
    env = {"KOPT_CACHE_DIR": os.path.join(work, "cache"), "KOPT_EXPERIENCE_DB": os.path.join(work, "experience.db")}
    # What the server needs of this environment; not PYTHONPATH, which holds the SDK here and
    # would reach kopt's Python workers.
    for name, value in os.environ.items():
        if name in ("CUDA_HOME", "LD_LIBRARY_PATH", "OCL_ICD_VENDORS", "POCL_DEVICES") or \
                (name.startswith("KOPT_") and name not in env):
            env[name] = value
    missing = missing_device(kopt, env_for_kopt(env), backend)
    if missing:
        print("[  SKIPPED ] " + missing)
        return SKIP
    failures, summary = [], {"backend": backend}
    try:
        anyio.run(session, kopt, source, backend, work, env, failures, summary, Client, MCPError,
                  StdioServerParameters)
    except Exception as e:  # a failure of the session itself is the test's failure
        failures.append("session: %r" % e)
    if summary_file:
        summary["failures"] = failures
        with open(summary_file, "w") as f:
            json.dump(summary, f, indent=2)
    for f in failures:
        print("FAILED:", f)
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
    print("mcp sdk session: %s" % ("ok" if not failures else "%d failure(s)" % len(failures)), flush=True)
    return 1 if failures else 0


def env_for_kopt(env):
    out = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out.update(env)
    return out


def check(cond, failures, case, what):
    if not cond:
        failures.append(case + ": " + what)
    return cond


def processes_with(text):
    """The pids whose command line holds `text` (the cancelled run's directory)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


async def session(kopt, source, backend, work, env, failures, summary, Client, MCPError, StdioServerParameters):
    import anyio
    softmax = os.path.join(source, "examples/softmax")
    # PoCL: a smaller softmax than the example's, so that the whole session stays in minutes.
    small = ["rows=512", "cols=1024"] if backend == "opencl" else []
    server = StdioServerParameters(command=kopt, args=["mcp"], env=env, cwd=work)
    async with Client(server) as client:
        # 1. the tools
        case = "tools/list"
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        summary["tools"] = len(tools)
        for name in ("env", "check", "bench", "profile", "analyze", "sass", "tune", "optimize", "target", "specs",
                     "iter_open", "iter_branch", "iter_close", "iter_finalize", "iter_mask", "report",
                     "experience_search", "experience_recommend", "experience_predictions", "experience_pitfalls",
                     "import_kernelbench", "campaign", "export", "init"):
            if check(name in tools, failures, case, "no tool " + name):
                t = tools[name]
                check(t.output_schema is not None and t.output_schema.get("type") == "object", failures, case,
                      name + " has no output schema")
                check("backend" in t.input_schema["properties"], failures, case, name + " takes no backend")
        if "check" in tools:
            args = set(tools["check"].input_schema["properties"])
            for a in ("problem", "kernel", "seeds", "first_seed", "dim", "dims", "set", "sanitize", "timeout",
                      "no_secret_seed", "backend"):
                check(a in args, failures, case, "check takes no argument " + a)
        if "optimize" in tools:
            args = set(tools["optimize"].input_schema["properties"])
            for a in ("problem", "iterations", "max_time", "dim", "resume", "run", "branches", "backend"):
                check(a in args, failures, case, "optimize takes no argument " + a)

        # 2. check, with its options, structured
        case = "check"
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, message))

        t0 = time.monotonic()
        r = await client.call_tool("check", {"problem": softmax, "kernel": ["naive"], "seeds": 2,
                                             "dim": ["rows=64"], "backend": backend}, progress_callback=on_progress)
        summary["check_s"] = round(time.monotonic() - t0, 2)
        if check(not r.is_error, failures, case, "is_error: %s" % r.content[0].text[-800:]):
            doc = r.structured_content
            check(doc.get("command") == "check", failures, case, "structured content %s" % str(doc)[:300])
            check(json.loads(r.content[0].text) == doc, failures, case, "text and structured content differ")
            kernels = doc.get("kernels") or []
            check(len(kernels) == 1 and kernels[0].get("status") == "passed", failures, case,
                  "kernels %s" % json.dumps(kernels)[:400])
        summary["check_progress"] = len(progress)

        # 3. bad arguments: a tool error with the reason, then the session goes on
        case = "bad arguments"
        r = await client.call_tool("check", {"problem": softmax, "seeds": "three"})
        check(r.is_error and "seeds" in r.content[0].text, failures, case, "answered %s" % r.content[0].text[:300])
        try:
            await client.call_tool("voodoo", {})
            failures.append(case + ": an unknown tool was not refused")
        except MCPError as e:
            check("unknown tool" in str(e), failures, case, "refused with %s" % e)
        await client.list_tools()  # still serving

        # 4. a whole optimize, with progress
        case = "optimize"
        progress = []
        run = os.path.join(work, "run-whole")
        t0 = time.monotonic()
        r = await client.call_tool("optimize", {"problem": softmax, "run": run, "iterations": 2, "branches": 2,
                                                "max_time": 0.3, "no_sanitize": True, "dim": small,
                                                "backend": backend},
                                   progress_callback=on_progress)
        summary["optimize_s"] = round(time.monotonic() - t0, 2)
        summary["optimize_progress"] = len(progress)
        summary["optimize_progress_messages"] = [m for _, m in progress[:3]] + [m for _, m in progress[-3:]]
        if check(not r.is_error, failures, case, "is_error: %s" % r.content[0].text[-1500:]):
            doc = r.structured_content
            check(doc.get("status") == "finished", failures, case, "status %s" % doc.get("status"))
            check(len(doc.get("versions") or []) >= 1, failures, case, "no versions")
            summary["optimize_status"] = doc.get("status")
            summary["optimize_stop_reason"] = doc.get("stop_reason")
            summary["optimize_versions"] = len(doc.get("versions") or [])
        check(len(progress) >= 1 and summary["optimize_s"] > 1, failures, case,
              "%d progress notification(s) in %.1f s" % (len(progress), summary["optimize_s"]))
        check(all(b[0] > a[0] for a, b in zip(progress, progress[1:])), failures, case, "progress does not increase")
        check(any(m and m.strip() and not m.startswith("running ") for _, m in progress), failures, case,
              "no progress message carries a log line: %s" % progress[:5])

        # 5. cancelled in the middle, then resumed
        case = "cancel"
        run = os.path.join(work, "run-cancelled")
        started = anyio.Event()
        progress = []

        async def on_started(value, total, message):
            progress.append((value, message))
            if len(progress) >= 3:
                started.set()

        args = {"problem": softmax, "run": run, "iterations": 2, "branches": 2, "max_time": 0.3,
                "no_sanitize": True, "dim": small, "backend": backend}
        async with anyio.create_task_group() as tg:
            async def call():
                await client.call_tool("optimize", args, progress_callback=on_started)
                failures.append(case + ": the optimize ended before it was cancelled")
                started.set()
            tg.start_soon(call)
            with anyio.fail_after(600):
                await started.wait()
            check(processes_with(run), failures, case, "no process runs the optimize before the cancel")
            tg.cancel_scope.cancel()
        t0 = time.monotonic()
        left = processes_with(run)
        while left and time.monotonic() - t0 < 15:
            await anyio.sleep(0.2)
            left = processes_with(run)
        summary["cancel_stopped_s"] = round(time.monotonic() - t0, 2)
        check(not left, failures, case, "processes still running 15 s after the cancel: %s" % left)
        await client.list_tools()  # still serving
        r = await client.call_tool("optimize", dict(args, resume=True), progress_callback=on_progress)
        if check(not r.is_error, failures, case, "the resumed run: %s" % r.content[0].text[-1500:]):
            summary["resumed_status"] = r.structured_content.get("status")
            summary["resumed_versions"] = len(r.structured_content.get("versions") or [])


if __name__ == "__main__":
    sys.exit(main())
