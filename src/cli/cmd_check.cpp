// `kopt check PROBLEM`: correctness of every kernel over several seeds.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iostream>

#include "commands.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/checker.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/evaluate/sanitize.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt::cli {
using evaluate::check_other_shape;
using evaluate::CheckContext;
using evaluate::CheckOptions;
using evaluate::CheckReport;
using evaluate::kernel_status_name;
using evaluate::KernelStatus;
using evaluate::ReferenceOn;
using evaluate::run_check;
using evaluate::sanitize_kernel;
using evaluate::sanitize_request;
using evaluate::sanitizer_summary;
using evaluate::sanitizer_verdict;
using evaluate::SanitizeRequest;
using evaluate::shape_origin_name;
namespace {

std::string sci(double v) {
  if (std::isinf(v)) return "inf";
  return fmt::format("{:.2e}", v);
}

std::string resources_text(const ResourceUsage& r) {
  auto n = [](std::int64_t v) { return v < 0 ? std::string("?") : std::to_string(v); };
  return fmt::format("{} regs, {} B smem, {} B local, {} B spilled", n(r.registers),
                     n(r.shared_static_bytes), n(r.local_bytes),
                     n(std::max(r.spill_store_bytes, r.spill_load_bytes)));
}

// Compiler messages minus ptxas' resource report (which is shown as numbers instead).
std::string compiler_messages(const std::string& log) {
  std::string out, line;
  std::istringstream in(log);
  while (std::getline(in, line))
    if (line.rfind("ptxas info", 0) != 0 && line.rfind("ptxas         .", 0) != 0)
      out += "    " + line + "\n";
  return out;
}

void print_sanitizer(const std::vector<SanitizerOutcome>& outcomes) {
  for (const auto& o : outcomes) {
    if (o.status != SanitizerStatus::findings) {
      std::cout << fmt::format(
          "    {:<10} {}{}\n", o.tool,
          o.status == SanitizerStatus::clean ? "clean" : "UNVERIFIABLE: " + o.reason,
          o.findings.empty() ? "" : fmt::format(" ({} warnings)", o.findings.size()));
      continue;
    }
    std::cout << fmt::format("    {:<10} FINDINGS ({})\n", o.tool, o.reason);
    for (const auto& f : o.findings)
      std::cout << fmt::format("      {}{}{}{}\n        {}\n", f.kind,
                               f.location.empty() ? "" : " at " + f.location,
                               f.kernel.empty() ? "" : " in " + f.kernel,
                               f.count > 1 ? fmt::format(" ({} reports)", f.count) : "", f.detail);
  }
}

// A kernel's launch as kopt made it; a solve() or a Triton kernel launches its own.
std::string launch_text(const Problem& p, const evaluate::KernelCheck& k) {
  if (const KernelSpec* spec = p.find_kernel(k.kernel)) {
    if (spec->abi == KernelSpec::Abi::solve) return "launch: its own (solve())";
    if (language_of(spec->source) == KernelLanguage::triton) return "launch: its own (Triton)";
  }
  return fmt::format("grid {} block {} smem {}", dim3_to_string(k.launch.grid),
                     dim3_to_string(k.launch.block), k.launch.shared_mem);
}

void print_human(const CheckReport& r, const Problem& p) {
  std::cout << fmt::format("kopt check {}  ({})\n", r.problem, r.problem_dir);
  if (r.device)
    std::cout << fmt::format("device: {} · {} · reference: {}{}\n", device_summary(*r.device),
                             r.toolkit, r.reference_kind, r.reference_cached ? " (cached)" : "");
  else
    std::cout << fmt::format("device: none — {}\n        built for {} with {}; nothing was run.\n",
                             r.device_error, r.arch, r.toolkit);
  if (!r.seeds.empty()) {
    std::string seeds;
    for (auto s : r.seeds)
      seeds +=
          (seeds.empty() ? "" : " ") + std::to_string(s) +
          (r.secret_seed == s ? " (secret, drawn now)" : "") +
          (r.wide_seed == s ? fmt::format(" (inputs {:g}x wider)", evaluate::k_wide_scale) : "");
    std::cout << "seeds: " << seeds << "\n";
    for (const auto& c : r.shape_checks) {
      if (!c.kernels.empty())
        std::cout << fmt::format(
            "also checked at {} {} ({}): {}{}{}\n", shape_origin_name(c.origin), c.dims,
            fmt::join(c.kernels, ", "),
            c.failed.empty() ? "every kernel passed" : "wrong there: ", fmt::join(c.failed, ", "),
            c.held.empty() ? "" : fmt::format(" (held: {})", fmt::join(c.held, ", ")));
      if (!c.note.empty()) std::cout << c.note << "\n";
    }
    if (!r.wide_seed_note.empty()) std::cout << r.wide_seed_note << "\n";
    if (r.fp64_seed)
      std::cout << "fp64 reference on seed " << *r.fp64_seed
                << ": every f32 output is also judged by its distance to it\n";
    else if (!r.fp64_note.empty())
      std::cout << r.fp64_note << "\n";
  }
  std::cout << "\n";
  for (const auto& k : r.kernels) {
    std::string status(kernel_status_name(k.status));
    for (auto& c : status) c = static_cast<char>(std::toupper(c));
    std::cout << fmt::format("{:<14} {:<15} [{}]  {}\n", k.kernel, status, point_to_string(k.point),
                             launch_text(p, k));
    if (k.build.ok)
      std::cout << "    build: " << resources_text(k.resources) << " (" << k.resources.source
                << ")\n";
    if (k.status == KernelStatus::compile_failed)
      std::cout << compiler_messages(k.build.log);
    else if (std::string msgs = compiler_messages(k.build.log); !msgs.empty())
      std::cout << "    compiler said:\n" << msgs;
    if (k.status == KernelStatus::run_failed || k.status == KernelStatus::lower_precision)
      std::cout << "    " << k.error << "\n";
    else if (k.precision && k.precision->lowest)
      std::cout << "    precision: " << k.precision->explain() << "\n";
    for (const auto& s : k.seeds) {
      for (const auto& o : s.outputs)
        std::cout << fmt::format(
            "    seed {} {:<8} max_abs {}  max_rel {}  rel_l2 {}  mismatches {}/{}{}{}\n", s.seed,
            o.tensor, sci(o.max_abs_err), sci(o.max_rel_err), sci(o.rel_l2_err), o.mismatches,
            o.numel, o.nan_count ? fmt::format("  NaN {}", o.nan_count) : "",
            o.unwritten ? fmt::format("  never written {}", o.unwritten) : "");
      for (const auto& o : s.outputs)
        for (const auto& m : o.first_mismatches) {
          std::string idx;
          for (auto i : m.index) idx += (idx.empty() ? "" : ",") + std::to_string(i);
          std::cout << fmt::format("      {}[{}] = {} expected {} (atol {}, rtol {})\n", o.tensor,
                                   idx, m.got, m.expected, o.tolerance.atol, o.tolerance.rtol);
        }
      for (const auto& e : k.fp64)
        if (s.seed == r.fp64_seed)
          std::cout << fmt::format(
              "    seed {} {:<8} fp64: rel_l2 {} (the f32 reference's {}, allowed {}){}\n", s.seed,
              e.tensor, sci(e.rel_l2), sci(e.reference_rel_l2), sci(e.bound),
              e.passed ? "" : "  LOWER PRECISION");
      for (const auto& name : s.modified_inputs)
        std::cout << fmt::format("    seed {} input tensor '{}' was modified by the kernel\n",
                                 s.seed, name);
    }
    print_sanitizer(k.sanitizer);
  }
  int passed = 0, failed = 0, not_run = 0;
  for (const auto& k : r.kernels) {
    if (sanitizer_verdict(k.sanitizer) == SanitizerStatus::findings)
      ++failed;
    else if (k.status == KernelStatus::passed)
      ++passed;
    else if (k.status == KernelStatus::not_run)
      ++not_run;
    else
      ++failed;
  }
  if (r.kernels.empty() && r.device) {
    std::cout << "no kernels yet: the reference ran on every seed; add a [[kernels]] table to "
                 "kopt.toml to check one\n";
    return;
  }
  std::cout << fmt::format("\n{} passed, {} failed", passed, failed);
  if (not_run) std::cout << fmt::format(", {} not run (no device)", not_run);
  std::cout << "\n";
}

}  // namespace

struct CheckCliOptions {
  ProblemSelection sel;
  int seeds = 3;
  std::uint64_t first_seed = 1;
  double timeout_s = 10.0;
  bool secret_seed = true;      // the last seed drawn at run time (--no-secret-seed: first + N - 1)
  bool other_shape = true;      // [check] dims: passing kernels checked at that shape too
  bool boundary_shapes = true;  // and at the boundary shapes derived from their constraints
  std::string sanitize;         // --sanitize memcheck,racecheck,...: "" runs none
  double sanitize_timeout_s = 600.0;
  ShapeFlags axes;                    // --axis NAME=V1,V2,...
  std::string verify_on = "auto";     // --verify-on host: every output read back and compared here
  std::string reference_on = "auto";  // --reference-on: CheckOptions::reference_on
};

// One shape: the report printed (text, or JSON when `doc` is null) and put in *doc; the exit
// code. An error goes into *doc too, where there is one.
int check_one(const GlobalOptions& g, const CheckCliOptions& o, ProblemSelection selection,
              nlohmann::json* doc) {
  auto report_error = [doc](const GlobalOptions& gl, const std::string& command, int code,
                            const std::string& message) {
    return cli::report_error(gl, command, code, message, doc);
  };
  selection.allow_no_kernels = true;  // a fresh import: its reference runs, before any kernel
  auto sel = load_selection(selection);
  if (!sel) return report_error(g, "check", exit_code(sel.error().kind), sel.error().to_string());

  TempDir tmp("kopt-worker");
  WorkerOptions wo = worker_options(o.sel.device, tmp.path());
  wo.job_timeout = std::chrono::milliseconds(static_cast<long>(o.timeout_s * 1000));
  WorkerClient worker(wo);
  auto compiler = evaluate::make_compiler(device_family(), worker);
  SystemCommandRunner runner;

  CheckOptions co;
  co.kernels = o.sel.kernels;
  co.sets = sel->sets;
  co.seeds = o.seeds;
  co.first_seed = o.first_seed;
  co.secret_seed = o.secret_seed;
  co.boundary_shapes = o.boundary_shapes;
  co.arch = o.sel.arch;
  co.cache_root = cache_dir();
  co.compare_on_device = parse_verify_on(o.verify_on) != VerifyOn::host;
  co.reference_on = parse_enum<ReferenceOn>(o.reference_on).value_or(ReferenceOn::automatic);
  if (g.verbose) co.log = [](const std::string& line) { std::cerr << "kopt: " << line << "\n"; };

  std::vector<std::string> tools;
  if (!o.sanitize.empty()) {
    auto parsed = parse_sanitizer_tools(o.sanitize);
    if (!parsed) return report_error(g, "check", 2, parsed.error().to_string());
    tools = *parsed;
  }
  auto report = run_check(sel->problem, co, CheckContext{*compiler, runner, worker});
  if (!report)
    return report_error(g, "check", exit_code(report.error().kind), report.error().to_string());
  if (o.other_shape && report->device)
    if (auto r =
            check_other_shape(sel->problem, co, CheckContext{*compiler, runner, worker}, *report);
        !r)
      return report_error(g, "check", exit_code(r.error().kind), r.error().to_string());
  if (!tools.empty() && report->device) {
    SanitizeRequest sr = sanitize_request(runner, tools, o.sel.device);
    sr.timeout_s = o.sanitize_timeout_s;
    sr.log = co.log;
    for (auto& k : report->kernels)
      if (k.status == KernelStatus::passed || k.status == KernelStatus::mismatch)
        k.sanitizer = sanitize_kernel(sel->problem, k, report->device->is_opencl(), sr, runner);
  }
  if (doc) *doc = to_json(*report);
  if (g.json && !doc)
    std::cout << to_json(*report).dump(2) << "\n";
  else if (!g.json)
    print_human(*report, sel->problem);
  if (report->exit_code() == 3)
    std::cerr << (report->device ? "kopt check: a sanitizer could not check a kernel: "
                                   "unverifiable, not passed (exit 3)\n"
                                 : "kopt check: no CUDA device, so no kernel was run (exit 3)\n");
  return report->exit_code();
}

int run_check_command(const GlobalOptions& g, const CheckCliOptions& o) {
  return run_over_shapes(
      g, "check", o.sel, o.axes,
      [&](ProblemSelection& s, nlohmann::json* doc) { return check_one(g, o, s, doc); },
      check_summary);
}

std::vector<Command> check_commands(const GlobalRef& g) {
  auto o = std::make_shared<CheckCliOptions>();
  Command c{.path = {"check"},
            .help = "correctness of a problem's kernels over several seeds",
            .run = [g, o] { return run_check_command(*g, *o); },
            .storage = o};
  add_selection(c, o->sel);
  add_axes(c, o->axes);
  c.options.insert(
      c.options.end(),
      {{.names = "--seeds", .help = "number of seeds", .target = &o->seeds, .range = {{1, 1000}}},
       {.names = "--first-seed", .help = "first seed (then +1 each)", .target = &o->first_seed},
       {.names = "--timeout",
        .help = "seconds one kernel run may take (watchdog)",
        .target = &o->timeout_s,
        .positive = true},
       {.names = "--no-secret-seed",
        .help = "the last seed is first-seed + seeds - 1 rather than one drawn at run time",
        .target = &o->secret_seed,
        .negates = true},
       {.names = "--no-other-shape",
        .help = "do not check passing kernels again at the problem's [check] dims (another "
                "shape, which catches a shape hard-coded into a kernel)",
        .target = &o->other_shape,
        .negates = true},
       {.names = "--no-boundary-shapes",
        .help = "do not check passing kernels again at the boundary shapes kopt derives from "
                "their constraints (sizes that are a multiple of no tile width, and of 1)",
        .target = &o->boundary_shapes,
        .negates = true},
       verify_on_option(&o->verify_on),
       {.names = "--reference-on",
        .help = "where a ref.py's outputs wait for the comparisons: auto (kept on the device "
                "from 256 MiB of outputs, or for Python kernels; else the reference cache's "
                "files), device, or files (a check of CUDA kernels again then runs no reference)",
        .target = &o->reference_on,
        .choices = {"auto", "device", "files"}},
       {.names = "--sanitize",
        .help = "also run each kernel under compute-sanitizer: "
                "memcheck,racecheck,synccheck,initcheck or all",
        .target = &o->sanitize},
       {.names = "--sanitize-timeout",
        .help = "seconds one sanitizer run may take",
        .target = &o->sanitize_timeout_s,
        .positive = true}});
  return {c};
}

}  // namespace kopt::cli
