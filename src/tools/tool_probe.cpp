#include "kopt/tools/tool_probe.hpp"

#include <cstdlib>
#include <regex>

#include "kopt/core/python.hpp"
#include "kopt/core/tools_dir.hpp"
#include "kopt/tools/ncu.hpp"

namespace kopt {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::vector<fs::path> cuda_tool_dirs() {
  std::vector<fs::path> out;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) out.emplace_back(fs::path(v) / "bin");
  out.emplace_back("/usr/local/cuda/bin");
  // pip's nvidia-cuda-nvdisasm (nvidia/cu13/bin), where scripts/bootstrap puts it when the
  // toolkit has none.
  fs::path pip = tools_dir("pip", [](const fs::path& d) { return fs::is_directory(d / "nvidia"); });
  std::error_code ec;
  if (!pip.empty())
    for (const auto& e : fs::directory_iterator(pip / "nvidia", ec))
      if (e.path().filename().string().starts_with("cu")) out.push_back(e.path() / "bin");
  return out;
}

std::string parse_tool_version(const std::string& name, const std::string& text) {
  std::smatch m;
  if (name == "nvcc" || name == "cuobjdump" || name == "nvdisasm") {
    static const std::regex re(R"(V(\d+\.\d+\.\d+))");
    if (std::regex_search(text, m, re)) return m[1];
    static const std::regex rel(R"(release (\d+\.\d+))");
    if (std::regex_search(text, m, rel)) return m[1];
  }
  static const std::regex version(R"([Vv]ersion:?\s+(\d+(\.\d+)+))");
  if (std::regex_search(text, m, version)) return m[1];
  static const std::regex any(R"((\d+\.\d+(\.\d+)*))");
  if (std::regex_search(text, m, any)) return m[1];
  return "";
}

ToolInfo probe_tool(CommandRunner& runner, const std::string& name) {
  ToolInfo t;
  t.name = name;
  auto path = find_program(name, cuda_tool_dirs());
  if (!path) {
    t.note = "not found on PATH or in the CUDA toolkit's bin directory";
    return t;
  }
  t.path = path->string();
  CommandResult r = runner.run({t.path, "--version"}, 60s);
  if (!r.started) {
    t.note = "found but could not be executed";
    return t;
  }
  t.found = true;
  t.version = parse_tool_version(name, r.out + r.err);
  if (!r.ok()) t.note = "--version exited abnormally";
  return t;
}

PythonInfo probe_python(CommandRunner& runner) {
  PythonInfo p;
  p.python = probe_tool(runner, choose_python("torch"));  // the Python kopt will run
  p.python.name = "python3";
  if (!p.python.found) return p;
  // One interpreter start for both imports; each import failure is reported, not fatal.
  static const char* script =
      "import sys\n"
      "def v(m):\n"
      "    try:\n"
      "        mod = __import__(m)\n"
      "        return getattr(mod, '__version__', '?')\n"
      "    except Exception as e:\n"
      "        return ''\n"
      "t = v('torch')\n"
      "tc = ''\n"
      "if t:\n"
      "    import torch\n"
      "    tc = torch.version.cuda or ''\n"
      "print('torch=' + t)\nprint('torch_cuda=' + tc)\nprint('triton=' + v('triton'))\n";
  CommandResult r = runner.run({p.python.path, "-c", script}, 120s);
  if (!r.ok()) {
    p.note = r.timed_out ? "importing torch/triton timed out"
                         : "python3 failed: " + r.err.substr(0, 200);
    return p;
  }
  std::smatch m;
  auto field = [&](const char* key) {
    std::regex re(std::string("(^|\n)") + key + "=([^\n]*)");
    return std::regex_search(r.out, m, re) ? std::string(m[2]) : std::string();
  };
  p.torch = field("torch");
  p.torch_cuda = field("torch_cuda");
  p.triton = field("triton");
  return p;
}

NcuProbe classify_ncu_probe(const CommandResult& r) {
  NcuProbe p;
  std::string all = r.out + r.err;
  if (!r.started) {
    p.access = CounterAccess::failed;
    p.detail = "ncu could not be executed";
  } else if (all.find("ERR_NVGPUCTRPERM") != std::string::npos) {
    p.access = CounterAccess::no_permission;
    p.detail = ncu_permission_help();
  } else if (r.timed_out) {
    p.access = CounterAccess::failed;
    p.detail = "the probe profile timed out";
  } else if (std::regex_search(
                 all, std::regex(R"("gpu__time_duration\.sum"\s*,\s*"[^"]*"\s*,\s*"[0-9.,]+")"))) {
    p.access = CounterAccess::ok;
    p.detail = "a probe kernel was profiled and gpu__time_duration.sum was read";
  } else {
    p.access = CounterAccess::failed;
    std::string tail = all.size() > 300 ? all.substr(all.size() - 300) : all;
    p.detail = "the probe profile produced no metric: " + tail;
  }
  return p;
}

std::string_view counter_access_name(CounterAccess a) {
  switch (a) {
    case CounterAccess::ok:
      return "ok";
    case CounterAccess::no_permission:
      return "no_permission";
    case CounterAccess::failed:
      return "failed";
    case CounterAccess::not_tried:
      return "not_tried";
  }
  return "?";
}

nlohmann::json to_json(const ToolInfo& t) {
  return {{"name", t.name},
          {"found", t.found},
          {"path", t.path},
          {"version", t.version},
          {"note", t.note}};
}

}  // namespace kopt
