// `kopt profile PROBLEM` (ncu → roofline → bottleneck) and `kopt analyze FILE` (the same
// analysis from saved ncu output).
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/analysis/advice.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/ceilings_store.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/evaluate/profiler.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/tools/ncu.hpp"
#include "kopt/tools/tool_probe.hpp"

namespace kopt::cli {
using evaluate::CheckContext;
using evaluate::find_ceilings_by_name;
using evaluate::KernelProfile;
using evaluate::ProfileReport;
using evaluate::ProfileRequest;
using evaluate::ProfileStatus;
using evaluate::run_profile;
using evaluate::StoredCeilings;
namespace {

std::vector<std::string> split_commas(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::size_t start = 0;
    while (start <= item.size()) {
      std::size_t comma = item.find(',', start);
      std::string part =
          item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!part.empty()) out.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

// ncu's path and version, or an environment error (exit 3) that says how to get it.
Expected<ToolInfo> find_ncu(CommandRunner& runner) {
  ToolInfo ncu = probe_tool(runner, "ncu");
  if (!ncu.found)
    return Unexpected(environment_error(
        "ncu (Nsight Compute) not found on PATH or in the CUDA toolkit's bin: install "
        "Nsight Compute or put ncu on PATH"));
  return ncu;
}

void print_profile(const ProfileReport& r) {
  for (const auto& k : r.kernels) {
    if (k.explanation) std::cout << summary_markdown(*k.explanation, k.provenance) << "\n";
    if (k.status != ProfileStatus::ok)
      std::cout << fmt::format("{}: {}: {}\n", k.kernel, k.status, k.error);
    if (k.explanation && k.provenance.report_file.empty())
      std::cout << fmt::format("written: {}/{{summary.md,details.md,analysis.json}}\n\n",
                               k.dir.string());
    else if (k.explanation)
      std::cout << fmt::format(
          "written: {}/{{summary.md,details.md,analysis.json,profile.csv}}, report {} "
          "({}, {:.1f} s)\n\n",
          k.dir.string(), k.provenance.report_file,
          k.session_kernels > 1 ? fmt::format("one ncu session of {} kernels", k.session_kernels)
                                : std::string("ncu"),
          k.ncu_wall_s);
  }
}

struct ProfileCliOptions {
  ProblemSelection sel;
  std::vector<std::string> questions;  // comma lists allowed
  std::optional<std::string> ncu_set;
  std::string clock_control = "none";
  int launch_skip = 0;
  int launch_count = 1;
  std::string out = "kopt-profiles";
  bool check_first = true;
  double timeout_s = 600;
  bool one_session = true;  // --session-per-kernel: one ncu session per kernel
};

struct AnalyzeCliOptions {
  std::string file;
  std::string kernel;
  std::optional<std::string> gpu;
  std::optional<std::string> problem;
};

int run_profile_command(const GlobalOptions& g, const ProfileCliOptions& given) {
  // `--set full` (no '=') names one of ncu's section sets; `--set NAME=VALUE` a parameter.
  ProfileCliOptions o = given;
  o.sel.sets.clear();
  for (const auto& s : given.sel.sets) {
    if (s.find('=') != std::string::npos) {
      o.sel.sets.push_back(s);
    } else if (o.ncu_set && *o.ncu_set != s) {
      return report_error(g, "profile", 2,
                          "two ncu section sets named: " + *o.ncu_set + " and " + s);
    } else {
      o.ncu_set = s;
    }
  }
  auto sel = load_selection(o.sel);
  if (!sel) return report_error(g, "profile", exit_code(sel.error().kind), sel.error().to_string());
  const Problem& problem = sel->problem;
  ProfileRequest req;
  req.kernels = o.sel.kernels;
  auto chosen = select_kernels(problem, req.kernels);
  if (!chosen) return report_error(g, "profile", 2, chosen.error().to_string());
  if (auto used = check_assignments_used(problem, *chosen, sel->sets, "--set"); !used)
    return report_error(g, "profile", 2, used.error().to_string());
  req.sets = sel->sets;
  req.questions = split_commas(o.questions);
  if (auto m = metrics_for_questions(req.questions); !m)
    return report_error(g, "profile", 2, m.error().to_string());
  if (o.ncu_set && !req.questions.empty())
    return report_error(g, "profile", 2,
                        "--ncu-set and --question choose the metrics two ways: give one");
  req.ncu_set = o.ncu_set;
  req.clock_control = o.clock_control;
  req.launch_skip = o.launch_skip;
  req.launch_count = o.launch_count;
  req.check_first = o.check_first;
  req.arch = o.sel.arch;
  req.device = o.sel.device;
  req.out_dir = std::filesystem::absolute(std::filesystem::path(o.out) / problem.name);
  req.cache_root = cache_dir();
  req.kopt_executable = self_executable();
  req.timeout_s = o.timeout_s;
  req.one_session = o.one_session;
  if (g.verbose) req.log = [](const std::string& line) { std::cerr << "kopt: " << line << "\n"; };

  SystemCommandRunner runner;
  if (device_family() != DeviceFamily::opencl) {  // OpenCL kernels get a timing-only analysis
    auto ncu = find_ncu(runner);
    if (!ncu) return report_error(g, "profile", 3, ncu.error().message);
    req.ncu = ncu->path;
    req.ncu_version = ncu->version;
  }

  TempDir tmp("kopt-worker");
  WorkerClient worker(worker_options(o.sel.device, tmp.path()));
  auto compiler = evaluate::make_compiler(device_family(), worker);
  auto report = run_profile(problem, req, CheckContext{*compiler, runner, worker});
  if (!report)
    return report_error(g, "profile", exit_code(report.error().kind), report.error().to_string());
  if (g.json)
    std::cout << to_json(*report).dump(2) << "\n";
  else
    print_profile(*report);
  return report->exit_code();
}

int run_analyze_command(const GlobalOptions& g, const AnalyzeCliOptions& o) {
  std::string text;
  SystemCommandRunner runner;
  if (o.file.ends_with(".ncu-rep")) {
    if (!std::filesystem::exists(o.file))
      return report_error(g, "analyze", 2, o.file + ": no such file");
    auto ncu = find_ncu(runner);
    if (!ncu) return report_error(g, "analyze", 3, ncu.error().message);
    CommandResult r =
        runner.run(ncu_import_argv(ncu->path, o.file), std::chrono::milliseconds(120000));
    if (!r.ok())
      return report_error(g, "analyze", 2,
                          o.file + ": ncu could not import it: " + r.err.substr(0, 400));
    text = r.out;
  } else {
    auto t = read_text_file(o.file);
    if (!t) return report_error(g, "analyze", 2, t.error().to_string());
    text = *t;
  }
  auto parsed = parse_ncu_csv(text, o.file);
  if (!parsed)
    return report_error(g, "analyze", exit_code(parsed.error().kind), parsed.error().to_string());
  auto target = select_kernel(*parsed, o.kernel);
  if (!target) return report_error(g, "analyze", 2, o.file + ": " + target.error().message);
  ExplainInputs in;
  in.profile = *target;
  for (const auto& l : parsed->launches)
    if (l.kernel == target->kernel)
      if (auto it = l.attributes.find("device__attribute_display_name"); it != l.attributes.end())
        in.device_name = it->second;
  if (o.gpu) {
    in.spec = find_gpu_spec(*o.gpu);
    if (!in.spec)
      return report_error(g, "analyze", 2,
                          "--gpu " + *o.gpu + ": not in the spec table (kopt specs lists it)");
    if (in.device_name.empty()) in.device_name = in.spec->name;
  }
  std::optional<StoredCeilings> ceilings;
  if (!in.device_name.empty()) ceilings = find_ceilings_by_name(cache_dir(), in.device_name);
  if (ceilings) {
    in.ceilings = &ceilings->result.ceilings;
    in.ceilings_measured_at = ceilings->measured_at;
  }
  ProfileProvenance prov;
  prov.device = in.device_name;
  prov.csv_file = o.file;
  if (o.problem) {
    auto p = load_problem(*o.problem);
    if (!p) return report_error(g, "analyze", exit_code(p.error().kind), p.error().to_string());
    prov.problem = p->name;
    Cost cost = p->cost_at_dims();
    in.cost_flops = cost.flops;
    in.cost_bytes = cost.bytes;
    in.has_half_data = p->has_half_data();
  }
  Explanation e = explain(in);
  auto catalog = builtin_method_catalog();
  if (!catalog) return report_error(g, "analyze", 4, catalog.error().to_string());
  AdviceInputs ai;
  ai.ctx.catalog = &*catalog;
  if (const GpuSpec* spec = in.spec ? in.spec : find_gpu_spec(in.device_name);
      spec && spec->arch.starts_with("sm_"))
    ai.ctx.sm = std::atoi(spec->arch.c_str() + 3);
  ai.explanation = &e;
  Advice advice = advise(ai);
  if (g.json) {
    nlohmann::json j{{"schema_version", 1},      {"command", "analyze"},
                     {"file", o.file},           {"layout", parsed->layout},
                     {"device", in.device_name}, {"analysis", to_json(e)},
                     {"advice", to_json(advice)}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << summary_markdown(e, prov) << advice_markdown(advice);
  }
  return 0;
}

}  // namespace

std::vector<Command> profile_commands(const GlobalRef& g) {
  auto o = std::make_shared<ProfileCliOptions>();
  Command prof{.path = {"profile"},
               .help = "ncu metrics -> roofline -> bottleneck, with the evidence",
               .run = [g, o] { return run_profile_command(*g, *o); },
               .storage = o};
  add_selection(prof, o->sel);
  prof.options.insert(
      prof.options.end(),
      {{.names = "--question",
        .help = "collect the metrics for these questions (repeatable or comma list): sol, "
                "memory, compute, occupancy, launch, stalls, instructions, source (default: all "
                "but source)",
        .target = &o->questions},
       {.names = "--ncu-set",
        .help = "collect one of ncu's own section sets instead (e.g. full); `--set full` says "
                "the same",
        .target = &o->ncu_set},
       {.names = "--clock-control",
        .help = "ncu --clock-control: none (clocks untouched) or base",
        .target = &o->clock_control,
        .choices = {"none", "base"}},
       {.names = "--launch-skip",
        .help = "launches to skip before profiling",
        .target = &o->launch_skip,
        .range = {{0, 1000}}},
       {.names = "--launch-count",
        .help = "launches to profile (averaged)",
        .target = &o->launch_count,
        .range = {{1, 100}}},
       {.names = "--out",
        .help = "directory for the reports (PROBLEM/KERNEL/ below it)",
        .target = &o->out},
       {.names = "--no-check",
        .help = "profile even if the output is wrong",
        .target = &o->check_first,
        .negates = true},
       {.names = "--timeout",
        .help = "seconds ncu may take per kernel",
        .target = &o->timeout_s,
        .positive = true},
       {.names = "--session-per-kernel",
        .help = "one ncu session per kernel instead of one for all (each pays ncu's start-up)",
        .target = &o->one_session,
        .negates = true}});

  auto a = std::make_shared<AnalyzeCliOptions>();
  Command an{.path = {"analyze"},
             .help = "the profile analysis from saved ncu output (CSV or .ncu-rep)",
             .run = [g, a] { return run_analyze_command(*g, *a); },
             .storage = a};
  an.options = {{.names = "file",
                 .help = "ncu CSV (--page raw or details) or an .ncu-rep",
                 .target = &a->file,
                 .required = true},
                {.names = "--kernel",
                 .help = "the kernel to analyse (default: the longest)",
                 .target = &a->kernel},
                {.names = "--gpu",
                 .help = "spec table entry for the roofs (default: the device named in the CSV)",
                 .target = &a->gpu},
                {.names = "--problem",
                 .help = "problem directory, for its cost formulas",
                 .target = &a->problem}};
  return {prof, an};
}

}  // namespace kopt::cli
