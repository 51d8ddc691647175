// A KernelBench batch's records: each problem's entry and the batch as JSON (its state file and
// --json) and as the markdown table of docs/kernelbench.md.
#include <fmt/format.h>

#include "kernelbench_cells.hpp"
#include "kopt/core/units.hpp"
#include "table_cell.hpp"

namespace kopt::campaign {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json to_json(const TimedOutcome& b) {
  return {{"status", b.status},       {"label", b.label}, {"median_s", b.median_s},
          {"rel_noise", b.rel_noise}, {"n", b.n},         {"flags", b.flags},
          {"error", b.error}};
}

TimedOutcome timed_from_json(const json& j) {
  TimedOutcome b;
  b.status = j.value("status", b.status);
  b.label = j.value("label", std::string{});
  b.median_s = j.value("median_s", 0.0);
  b.rel_noise = j.value("rel_noise", 0.0);
  b.n = j.value("n", std::size_t{0});
  b.flags = j.value("flags", std::vector<std::string>{});
  b.error = j.value("error", std::string{});
  return b;
}

json to_json(const CandidateOutcome& c) {
  return {{"file", c.file},
          {"hash", c.hash},
          {"verdict", c.verdict},
          {"check", c.check},
          {"timing", to_json(c.timing)},
          {"cause", c.cause},
          {"check_s", c.check_s},
          {"bench_s", c.bench_s}};
}

CandidateOutcome candidate_from_json(const json& j) {
  CandidateOutcome c;
  c.file = j.value("file", std::string{});
  c.hash = j.value("hash", std::string{});
  c.verdict = j.value("verdict", c.verdict);
  c.check = j.value("check", c.check);
  if (j.contains("timing") && j.at("timing").is_object())
    c.timing = timed_from_json(j.at("timing"));
  c.cause = j.value("cause", std::string{});
  c.check_s = j.value("check_s", 0.0);
  c.bench_s = j.value("bench_s", 0.0);
  return c;
}

std::string noise_cell(const TimedOutcome& b) {
  if (b.status != VariantStatus::ok) return "-";
  return fmt::format("{:.1f} %{}", 100 * b.rel_noise, b.flags.empty() ? "" : " (flagged)");
}

std::string cell(std::string s) {
  return table_cell(std::move(s), 300);
}

json outputs_json(const std::map<std::string, OutputSummary>& outputs) {
  json j = json::object();
  for (const auto& [name, o] : outputs) j[name] = to_json(o);
  return j;
}

// A reference output with NaN or inf in it: the problem cannot tell a right kernel from a wrong
// one there (a NaN equals nothing), which a reader of the table must know.
std::vector<std::string> output_flags(const KernelbenchEntry& e) {
  std::vector<std::string> flags;
  for (const auto& [name, o] : e.reference_outputs)
    if (o.nan + o.inf > 0)
      flags.push_back(fmt::format("reference output {}: {} NaN and {} inf of {} elements", name,
                                  o.nan, o.inf, o.elements));
  return flags;
}

}  // namespace

bool kernelbench_imported(const KernelbenchEntry& e) {
  return e.status == ImportStatus::imported || e.status == ImportStatus::kept;
}

std::string time_cell(const TimedOutcome& b) {
  if (b.status == VariantStatus::not_run) return "-";
  if (b.status != VariantStatus::ok) return std::string(name_of(b.status));
  double us = b.median_s * 1e6;
  return us >= 1000 ? fmt::format("{:.2f} ms", us / 1000) : fmt::format("{:.1f} us", us);
}

std::string candidate_cell(const CandidateOutcome& c) {
  switch (c.verdict) {
    case CandidateVerdict::none:
      return "-";
    case CandidateVerdict::passed:
      return fmt::format("passed ({})", time_cell(c.timing));
    case CandidateVerdict::failed:
      // The step that refused it; where neither ran (a file that is no ModelNew), the cause.
      if (c.check != evaluate::KernelStatus::passed && c.check != evaluate::KernelStatus::not_run)
        return fmt::format("failed ({})", name_of(c.check));
      if (c.timing.status != VariantStatus::not_run)
        return fmt::format("failed ({})", name_of(c.timing.status));
      return "failed";
    case CandidateVerdict::not_run:
      break;
  }
  return std::string(name_of(c.verdict));
}

namespace {
// Whether the file waited for its import process's start (a tenth of a second rounds to it).
bool waited_for_start(const KernelbenchEntry& e) {
  return e.import_start_s >= 0.05;
}
}  // namespace

// "0.3", or "5.8 (5.1 start)" where the file waited for its import process's start.
std::string import_cell(const KernelbenchEntry& e) {
  if (!waited_for_start(e)) return fmt::format("{:.1f}", e.import_s);
  return fmt::format("{:.1f} ({:.1f} start)", e.import_s, e.import_start_s);
}

json to_json(const KernelbenchEntry& e) {
  return {{"file", e.file},
          {"problem", e.problem},
          {"status", e.status},
          {"error", e.error},
          {"import_s", e.import_s},
          {"import_start_s", e.import_start_s},
          {"flops_known", e.flops_known},
          {"notes", e.notes},
          {"reference", e.reference},
          {"reference_error", e.reference_error},
          {"reference_s", e.reference_s},
          {"reference_outputs", outputs_json(e.reference_outputs)},
          {"gpu_memory", to_json(e.memory)},
          {"device", e.device},
          {"baselines_s", e.baselines_s},
          {"eager", to_json(e.eager)},
          {"compile", to_json(e.compiled)},
          {"candidate", to_json(e.candidate)}};
}

KernelbenchEntry kernelbench_entry_from_json(const json& j) {
  KernelbenchEntry e;
  e.file = j.at("file");
  e.problem = j.value("problem", fs::path(e.file).stem().string());
  e.status = j.value("status", e.status);
  e.error = j.value("error", std::string{});
  e.import_s = j.value("import_s", 0.0);
  e.import_start_s = j.value("import_start_s", 0.0);
  e.flops_known = j.value("flops_known", false);
  e.notes = j.value("notes", std::vector<std::string>{});
  e.reference = j.value("reference", e.reference);
  e.reference_error = j.value("reference_error", std::string{});
  e.reference_s = j.value("reference_s", 0.0);
  if (j.contains("gpu_memory")) e.memory = memory_from_json(j.at("gpu_memory"));
  e.device = j.value("device", std::string{});
  if (j.contains("reference_outputs"))
    for (const auto& [name, o] : j.at("reference_outputs").items())
      e.reference_outputs[name] = output_summary_from_json(o);
  e.baselines_s = j.value("baselines_s", 0.0);
  if (j.contains("eager")) e.eager = timed_from_json(j.at("eager"));
  if (j.contains("compile")) e.compiled = timed_from_json(j.at("compile"));
  if (j.contains("candidate")) e.candidate = candidate_from_json(j.at("candidate"));
  return e;
}

json to_json(const KernelbenchBatch& b) {
  json problems = json::array();
  std::size_t n_imported = 0, refused = 0, failed = 0, reference_ok = 0, both_timed = 0;
  std::map<CandidateVerdict, std::size_t> candidates;
  for (const auto& e : b.entries) {
    problems.push_back(to_json(e));
    n_imported += kernelbench_imported(e);
    refused += e.status == ImportStatus::refused;
    failed += e.status == ImportStatus::failed;
    reference_ok += e.reference == ReferenceStatus::ok;
    both_timed += e.eager.status == VariantStatus::ok && e.compiled.status == VariantStatus::ok;
    if (e.candidate.verdict != CandidateVerdict::none) ++candidates[e.candidate.verdict];
  }
  std::size_t n_candidates = 0;
  for (const auto& [v, n] : candidates) n_candidates += n;
  return {{"schema_version", 1},
          {"command", "import kernelbench"},
          {"device", b.device},
          {"wall_s", b.wall_s},
          {"files", b.entries.size()},
          {"imported", n_imported},
          {"refused", refused},
          {"failed", failed},
          {"reference_ok", reference_ok},
          {"baselines_timed", both_timed},
          {"candidates",
           {{"files", n_candidates},
            {"passed", candidates[CandidateVerdict::passed]},
            {"failed", candidates[CandidateVerdict::failed]},
            {"not_run", candidates[CandidateVerdict::not_run]}}},
          {"problems", problems},
          {"exit_code", b.exit_code()}};
}

std::string kernelbench_markdown(const KernelbenchBatch& b) {
  json totals = to_json(b);
  const json& cand = totals["candidates"];
  const bool with_candidates = cand["files"].get<std::size_t>() > 0;
  std::string md = fmt::format(
      "{} files: {} imported, {} refused, {} failed; reference ran on {}; both baselines timed on "
      "{}{}{}.\n\n",
      totals["files"].get<std::size_t>(), totals["imported"].get<std::size_t>(),
      totals["refused"].get<std::size_t>(), totals["failed"].get<std::size_t>(),
      totals["reference_ok"].get<std::size_t>(), totals["baselines_timed"].get<std::size_t>(),
      b.device.empty() ? "" : " (" + b.device + ")",
      with_candidates
          ? fmt::format("; candidates: {} passed, {} failed, {} not run of {}",
                        cand["passed"].get<std::size_t>(), cand["failed"].get<std::size_t>(),
                        cand["not_run"].get<std::size_t>(), cand["files"].get<std::size_t>())
          : std::string());
  std::size_t read = 0, within = 0;
  for (const auto& e : b.entries)
    if (auto used = e.memory.used_bytes()) {
      ++read;
      within += *used <= e.memory.bound_bytes ? 1 : 0;
    }
  if (read > 0)
    md += fmt::format(
        "GPU memory within its bound on {} of {} problems read: the device's memory in use at "
        "the problem's peak less at its start (NVML), of its tensors, the most one call of its "
        "computation (reference, eager, torch.compile) allocated beside them (torch's "
        "allocator) and 10 %; over it, how far torch's allocator grew in kopt's Python process "
        "(and how much of that its live tensors took), the kind of request that reserved the "
        "most, and what the device held beyond it outside torch's allocator (what CUDA "
        "libraries load into a context, other processes).\n\n",
        within, read);
  if (std::any_of(b.entries.begin(), b.entries.end(), waited_for_start))
    md +=
        "An import's seconds count its process's start where the file was that process's "
        "first (Python, torch's import, the GPU's context: \"(N start)\"), which a harness of "
        "one process pays once before all its problems.\n\n";
  md +=
      "| problem | import s | flops | reference | eager | torch.compile | noise eager / compile | "
      "GPU memory: used of bound |" +
      std::string(with_candidates ? " candidate |" : "") + " why not, flags |\n";
  md += "|---|---:|---|---|---:|---:|---|---:|" + std::string(with_candidates ? "---|" : "") +
        "---|\n";
  for (const auto& e : b.entries) {
    std::string why;
    auto say = [&why](const std::string& s) {
      if (!s.empty()) why += (why.empty() ? "" : "; ") + s;
    };
    for (const std::string* s : {&e.error, &e.reference_error, &e.eager.error, &e.compiled.error})
      say(*s);
    for (const auto& f : output_flags(e)) say(f);
    if (e.reference != ReferenceStatus::not_run && !e.memory.used_bytes() && !e.memory.note.empty())
      say("GPU memory not read: " + e.memory.note);
    for (const auto* bl : {&e.eager, &e.compiled})
      for (const auto& f : bl->flags) say(std::string(bl == &e.eager ? "eager " : "compile ") + f);
    if (!e.candidate.cause.empty()) say("candidate " + e.candidate.cause);
    for (const auto& f : e.candidate.timing.flags) say("candidate " + f);
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} / {} | {} |{} {} |\n", cell(e.problem),
        e.status == ImportStatus::kept ? std::string("kept") : import_cell(e),
        kernelbench_imported(e) ? (e.flops_known ? "formula" : "unknown") : "-",
        e.reference == ReferenceStatus::ok ? fmt::format("ok ({:.1f} s)", e.reference_s)
                                           : std::string(name_of(e.reference)),
        time_cell(e.eager), time_cell(e.compiled), noise_cell(e.eager), noise_cell(e.compiled),
        memory_cell(e), with_candidates ? " " + candidate_cell(e.candidate) + " |" : std::string(),
        cell(kernelbench_imported(e) ? why : std::string(name_of(e.status)) + ": " + why));
  }
  return md;
}

}  // namespace kopt::campaign
