#include "kopt/tools/sanitizer.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

#include "kopt/core/text.hpp"

namespace kopt {
namespace {

constexpr std::string_view k_prefix = "=========";

// What follows the "=========" prefix of a report line; nullopt for a program's own line.
std::optional<std::string> report_text(const std::string& line) {
  if (line.rfind(k_prefix, 0) != 0) return std::nullopt;
  return line.substr(k_prefix.size());
}

// "at kernel(float*)+0x90 in /tmp/x/kernel.cu:27" (2022 and later) or
// "at 0x90 in /tmp/x/kernel.cu:27:kernel" (older): the kernel and the file:line.
void read_location(const std::string& text, SanitizerFinding& f) {
  static const std::regex modern(R"(at (.+?)\+0x[0-9a-fA-F]+ in (.+?):(\d+))");
  static const std::regex older(R"(at 0x[0-9a-fA-F]+ in (.+?):(\d+):(\S+))");
  std::smatch m;
  if (std::regex_search(text, m, older)) {
    if (f.kernel.empty()) f.kernel = m[3];
    if (f.location.empty())
      f.location = std::filesystem::path(m[1].str()).filename().string() + ":" + m[2].str();
  } else if (std::regex_search(text, m, modern)) {
    if (f.kernel.empty()) f.kernel = m[1];
    if (f.location.empty())
      f.location = std::filesystem::path(m[2].str()).filename().string() + ":" + m[3].str();
  } else if (static const std::regex bare(R"(at (.+?)\+0x[0-9a-fA-F]+)");
             f.kernel.empty() && std::regex_search(text, m, bare)) {
    f.kernel = m[1];  // no line info in the build
  }
}

// A line that says the tool could not check at all.
std::optional<std::string> refusal(const std::string& text) {
  for (std::string_view s :
       {"Device not supported", "Internal Sanitizer Error", "Unable to find injection library",
        "Target application terminated before first instrumented API call",
        "Error: No attachable process found", "Tool is not supported"})
    if (text.find(s) != std::string::npos) return text;
  return std::nullopt;
}

// Findings that differ only in thread, block or address are one finding with a count.
void fold(std::vector<SanitizerFinding>& findings) {
  std::vector<SanitizerFinding> out;
  for (auto& f : findings) {
    auto same = std::find_if(out.begin(), out.end(), [&](const SanitizerFinding& g) {
      return g.kind == f.kind && g.kernel == f.kernel && g.location == f.location;
    });
    if (same != out.end())
      same->count += f.count;
    else
      out.push_back(std::move(f));
  }
  findings = std::move(out);
}

}  // namespace

const std::vector<std::string>& sanitizer_tools() {
  static const std::vector<std::string> tools = {"memcheck", "racecheck", "synccheck", "initcheck"};
  return tools;
}

Expected<std::vector<std::string>> parse_sanitizer_tools(const std::string& list) {
  std::vector<std::string> tools;
  std::stringstream in(list);
  for (std::string t; std::getline(in, t, ',');) {
    t = trim(t);
    if (t.empty()) continue;
    if (t == "all") {
      tools = sanitizer_tools();
      continue;
    }
    const auto& known = sanitizer_tools();
    if (std::find(known.begin(), known.end(), t) == known.end())
      return Unexpected(bad_input("unknown compute-sanitizer tool '" + t +
                                      "' (memcheck, racecheck, synccheck, initcheck or all)",
                                  "", 0, "--sanitize"));
    if (std::find(tools.begin(), tools.end(), t) == tools.end()) tools.push_back(t);
  }
  if (tools.empty()) return Unexpected(bad_input("names no tool", "", 0, "--sanitize"));
  return tools;
}

std::vector<std::string> sanitizer_argv(const SanitizerRequest& r) {
  std::vector<std::string> argv = {r.sanitizer.string(),
                                   "--tool",
                                   r.tool,
                                   "--print-limit",
                                   "64",
                                   "--error-exitcode",
                                   std::to_string(k_sanitizer_error_exit),
                                   "--show-backtrace",
                                   "device"};
  // A padding buffer after every allocation: a read just past one tensor would otherwise land
  // in the next one, which memcheck takes for valid memory.
  if (r.tool == "memcheck") argv.insert(argv.end(), {"--padding", "1024"});
  if (r.tool == "racecheck") argv.insert(argv.end(), {"--racecheck-report", "analysis"});
  argv.insert(argv.end(), r.program.begin(), r.program.end());
  return argv;
}

SanitizerOutcome parse_sanitizer_output(const std::string& tool, const CommandResult& run) {
  SanitizerOutcome o;
  o.tool = tool;
  if (!run.started) {
    o.reason = "compute-sanitizer could not be started: " + trim(run.err);
    return o;
  }
  std::vector<SanitizerFinding> findings, api_errors;
  SanitizerFinding* open = nullptr;
  bool summary = false, clean_summary = false;
  std::optional<std::string> refused;  // the line that says the tool could not check
  std::istringstream in(run.out + "\n" + run.err);
  for (std::string line; std::getline(in, line);) {
    auto text = report_text(line);
    if (!text) continue;
    if (o.output.size() < 16384)
      o.output += line + "\n";  // the report's own lines, as the tool printed them
    if (refused) continue;
    if ((refused = refusal(*text))) continue;
    bool continuation =
        text->starts_with("  ");  // "=========     at ..." belongs to the report above
    std::string body = trim(*text);
    if (body.empty() || body == "COMPUTE-SANITIZER") {
      open = nullptr;
      continue;
    }
    if (continuation) {
      if (!open) continue;
      read_location(body, *open);
      if (body.starts_with("Host Frame") || body.starts_with("Device Frame") ||
          body.starts_with("Saved host") || body.starts_with("Saved device"))
        continue;
      if (open->detail.size() < 600) open->detail += (open->detail.empty() ? "" : "; ") + body;
      continue;
    }
    open = nullptr;
    if (body.starts_with("ERROR SUMMARY:") || body.starts_with("RACECHECK SUMMARY:") ||
        body.starts_with("LEAK SUMMARY:")) {
      summary = true;
      o.reason = body;
      if (body.find(": 0 error") != std::string::npos ||
          body.find(": 0 hazard") != std::string::npos)
        clean_summary = true;
      continue;
    }
    SanitizerFinding f;
    f.tool = tool;
    if (body.starts_with(
            "Program hit")) {  // an API call failed, usually because of a finding above
      f.kind = body;
      api_errors.push_back(std::move(f));
      continue;
    }
    std::string kind = body;
    for (std::string_view p : {"Error: ", "Warning: "})
      if (kind.starts_with(p)) kind = (p == "Warning: " ? "warning: " : "") + kind.substr(p.size());
    f.kind = kind;
    read_location(kind, f);
    findings.push_back(std::move(f));
    open = &findings.back();
  }
  if (refused) {
    o.reason = "compute-sanitizer could not check: " + trim(*refused);
    return o;
  }
  // A racecheck warning is a hazard that may be benign (two writes of the same value): kept,
  // shown, but not a failure on its own.
  bool errors = std::any_of(findings.begin(), findings.end(),
                            [](auto& f) { return !f.kind.starts_with("warning: "); });
  if (findings.empty() && !api_errors.empty()) {
    findings = std::move(api_errors);
    errors = true;
  }
  fold(findings);
  o.findings = std::move(findings);
  if (errors || (run.exit_code == k_sanitizer_error_exit && !o.findings.empty())) {
    o.status = SanitizerStatus::findings;
  } else if (run.timed_out) {
    o.reason = "compute-sanitizer timed out (a kernel runs far slower under it)";
  } else if (summary && clean_summary && run.ok()) {
    o.status = SanitizerStatus::clean;
  } else if (!run.ok()) {
    std::string tail = trim(run.err.size() > 400 ? run.err.substr(run.err.size() - 400) : run.err);
    o.reason = "the checked program failed (" +
               (run.signal ? "signal " + std::to_string(run.signal)
                           : "exit code " + std::to_string(run.exit_code)) +
               ") without a finding: " + tail;
  } else {
    o.reason = "compute-sanitizer printed no summary: its report cannot be read";
  }
  return o;
}

}  // namespace kopt
