#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"

namespace {

// The options that select a problem and a point, the same for every command that takes them.
void add_selection(CLI::App* cmd, kopt::cli::ProblemSelection& sel, bool with_vs,
                   const char* vs_help) {
  cmd->add_option("problem", sel.problem, "problem directory (or its kopt.toml)")->required();
  cmd->add_option("--kernel", sel.kernels, "only this kernel (repeatable; default: all)");
  cmd->add_option("--set", sel.sets, "parameter value NAME=VALUE (repeatable)");
  if (with_vs) cmd->add_option("--vs", sel.vs, vs_help);
  cmd->add_option("--dim", sel.dims, "override a dim NAME=VALUE (repeatable)");
  cmd->add_option("--arch", sel.arch, "target architecture, e.g. sm_90 (default: the device's)");
  cmd->add_option("--device", sel.device,
                  "device ordinal (CUDA, or OpenCL with --backend opencl: GPUs first)");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kopt::cli;
  CLI::App app{"kopt: evidence-driven GPU kernel optimization"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kopt ") + KOPT_VERSION);
  GlobalOptions g;
  app.add_flag("--json", g.json, "print one JSON document on stdout (logs go to stderr)");
  app.add_flag("-v,--verbose", g.verbose, "log progress to stderr");
  std::string backend = "auto";
  app.add_option(
         "--backend", backend,
         "cuda, opencl, triton (a problem's .py kernels, on the CUDA GPU), or auto (CUDA when a "
         "CUDA GPU is present, else OpenCL)")
      ->check(CLI::IsMember({"cuda", "opencl", "triton", "auto"}))
      ->envname("KOPT_BACKEND");
  app.fallthrough();

  EnvOptions env;
  auto* env_cmd =
      app.add_subcommand("env", "what is here: GPUs, driver, CUDA, NVRTC, tools, Python");
  env_cmd->add_flag("--json", g.json, "JSON output");
  env_cmd->add_flag("!--no-ncu-probe", env.probe_ncu,
                    "do not run a tiny profile to test counter access");

  CheckCliOptions check;
  auto* check_cmd =
      app.add_subcommand("check", "correctness of a problem's kernels over several seeds");
  add_selection(check_cmd, check.sel, false, "");
  check_cmd->add_option("--seeds", check.seeds, "number of seeds")->check(CLI::Range(1, 1000));
  check_cmd->add_option("--first-seed", check.first_seed, "first seed (then +1 each)");
  check_cmd->add_option("--timeout", check.timeout_s, "seconds one kernel run may take (watchdog)")
      ->check(CLI::PositiveNumber);
  check_cmd->add_flag("!--no-secret-seed", check.secret_seed,
                      "the last seed is first-seed + seeds - 1 rather than one drawn at run time");
  check_cmd->add_flag(
      "!--no-other-shape", check.other_shape,
      "do not check passing kernels again at the problem's [check] dims (another shape, which "
      "catches a shape hard-coded into a kernel)");
  check_cmd->add_option("--sanitize", check.sanitize,
                        "also run each kernel under compute-sanitizer: "
                        "memcheck,racecheck,synccheck,initcheck or all");
  check_cmd
      ->add_option("--sanitize-timeout", check.sanitize_timeout_s,
                   "seconds one sanitizer run may take")
      ->check(CLI::PositiveNumber);
  check_cmd->add_flag("--json", g.json, "JSON output");
  check_cmd->add_flag("-v,--verbose", g.verbose, "log progress to stderr");

  BenchCliOptions bench;
  auto* bench_cmd =
      app.add_subcommand("bench", "time kernels (cold or hot cache), or compare two with --vs");
  add_selection(bench_cmd, bench.sel, true,
                "compare with the same point changed by NAME=VALUE (repeatable)");
  bench_cmd->add_option("--vs-kernel", bench.vs_kernel,
                        "compare with another kernel of the problem");
  bench_cmd->add_option("--mode", bench.mode, "cold (L2 flushed before each sample) or hot")
      ->check(CLI::IsMember({"cold", "hot"}));
  bench_cmd
      ->add_option("--flush", bench.flush,
                   "cold mode: read (clean L2, default) or write (dirty L2) the flush buffer")
      ->check(CLI::IsMember({"read", "write"}));
  bench_cmd
      ->add_option("--max-noise", bench.max_noise_pct,
                   "stop when the relative noise is below this (%)")
      ->check(CLI::PositiveNumber);
  bench_cmd->add_option("--min-samples", bench.min_samples, "at least this many samples")
      ->check(CLI::Range(2, 1000000));
  bench_cmd->add_option("--min-time", bench.min_time_s, "at least this much measured GPU time (s)")
      ->check(CLI::NonNegativeNumber);
  bench_cmd->add_option("--max-time", bench.max_time_s, "time cap per bench (s)")
      ->check(CLI::PositiveNumber);
  bench_cmd->add_option("--warmup", bench.warmup_s, "warm-up per variant (s)")
      ->check(CLI::NonNegativeNumber);
  bench_cmd
      ->add_option("--threshold", bench.threshold_pct,
                   "difference below which A and B are the same (%)")
      ->check(CLI::PositiveNumber);
  bench_cmd->add_flag("!--no-check", bench.check_first, "time without checking correctness first");
  bench_cmd->add_flag("--vs-torch", bench.vs_torch,
                      "also time the PyTorch reference (ref.py), eager and through torch.compile");
  bench_cmd->add_flag("!--no-blocking-kernel", bench.blocking,
                      "do not hold the stream while queueing a sample");
  bench_cmd->add_flag("!--no-verify-samples", bench.verify_samples,
                      "do not poison outputs before random timed samples and compare them with an "
                      "untimed launch's");
  bench_cmd->add_option(
      "--gpus", bench.gpus,
      "all, or N,M,...: one worker per device, the variants measured one per worker (each "
      "names its device); a comparison (--vs) stays on one device");
  bench_cmd->add_option("--cluster", bench.cluster,
                        "ray, or ray:ADDRESS: as --gpus over the devices of a Ray cluster");
  bench_cmd->add_flag("--allow-mixed", bench.allow_mixed,
                      "with --gpus or --cluster: devices of different models");
  bench_cmd->add_flag("--json", g.json, "JSON output (raw samples and provenance)");
  bench_cmd->add_flag("-v,--verbose", g.verbose, "log progress to stderr");

  CeilingsCliOptions ceil;
  auto* ceil_cmd =
      app.add_subcommand("ceilings", "measure the device's real ceilings (cached per device)");
  ceil_cmd->add_flag("--refresh", ceil.refresh, "measure again even if cached");
  ceil_cmd->add_option("--device", ceil.device,
                       "device ordinal (CUDA, or OpenCL with --backend opencl: GPUs first)");
  ceil_cmd->add_flag("--json", g.json, "JSON output");

  SassCliOptions sass;
  auto* sass_cmd =
      app.add_subcommand("sass", "machine-code facts and method signatures of kernels");
  add_selection(sass_cmd, sass.sel, true,
                "diff against the same point changed by NAME=VALUE (repeatable)");
  sass_cmd->add_option("--method", sass.methods,
                       "check this method's signature (repeatable; default: all)");
  sass_cmd->add_option("--catalog", sass.catalog, "a method catalog instead of the built-in one");
  sass_cmd->add_flag("--json", g.json, "JSON output");

  ProfileCliOptions prof;
  auto* prof_cmd =
      app.add_subcommand("profile", "ncu metrics -> roofline -> bottleneck, with the evidence");
  add_selection(prof_cmd, prof.sel, false, "");
  prof_cmd->add_option(
      "--question", prof.questions,
      "collect the metrics for these questions (repeatable or comma list): sol, memory, compute, "
      "occupancy, launch, stalls, instructions, source (default: all but source)");
  prof_cmd->add_option(
      "--ncu-set", prof.ncu_set,
      "collect one of ncu's own section sets instead (e.g. full); `--set full` says the same");
  prof_cmd
      ->add_option("--clock-control", prof.clock_control,
                   "ncu --clock-control: none (default, clocks untouched) or base")
      ->check(CLI::IsMember({"none", "base"}));
  prof_cmd->add_option("--launch-skip", prof.launch_skip, "launches to skip before profiling")
      ->check(CLI::Range(0, 1000));
  prof_cmd->add_option("--launch-count", prof.launch_count, "launches to profile (averaged)")
      ->check(CLI::Range(1, 100));
  prof_cmd->add_option("--out", prof.out, "directory for the reports (PROBLEM/KERNEL/ below it)");
  prof_cmd->add_flag("!--no-check", prof.check_first, "profile even if the output is wrong");
  prof_cmd->add_option("--timeout", prof.timeout_s, "seconds ncu may take per kernel")
      ->check(CLI::PositiveNumber);
  prof_cmd->add_flag(
      "!--session-per-kernel", prof.one_session,
      "one ncu session per kernel instead of one for all (each pays ncu's start-up)");
  prof_cmd->add_flag("--json", g.json, "JSON output");
  prof_cmd->add_flag("-v,--verbose", g.verbose, "log progress to stderr");

  AnalyzeCliOptions an;
  auto* an_cmd =
      app.add_subcommand("analyze", "the profile analysis from saved ncu output (CSV or .ncu-rep)");
  an_cmd->add_option("file", an.file, "ncu CSV (--page raw or details) or an .ncu-rep")->required();
  an_cmd->add_option("--kernel", an.kernel, "the kernel to analyse (default: the longest)");
  an_cmd->add_option("--gpu", an.gpu,
                     "spec table entry for the roofs (default: the device named in the CSV)");
  an_cmd->add_option("--problem", an.problem, "problem directory, for its cost formulas");
  an_cmd->add_flag("--json", g.json, "JSON output");

  TuneCliOptions tune;
  auto* tune_cmd =
      app.add_subcommand("tune", "search a kernel's parameter space (strategy, budget)");
  add_selection(tune_cmd, tune.sel, false, "");
  tune_cmd
      ->add_option("--strategy", tune.strategy, "exhaustive, random, local, annealing or genetic")
      ->check(CLI::IsMember({"exhaustive", "random", "local", "annealing", "genetic"}));
  tune_cmd->add_option("--budget", tune.budget, "points to evaluate at most")
      ->check(CLI::Range(1, 100000));
  tune_cmd
      ->add_option("--time-budget", tune.time_budget_s, "seconds the search may take (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  tune_cmd->add_option("--seed", tune.seed, "random seed of the strategy");
  tune_cmd->add_option("--max-time", tune.max_time_s, "time cap of each full measurement (s)")
      ->check(CLI::PositiveNumber);
  tune_cmd->add_option("--jobs", tune.jobs, "builds in parallel (default: the machine's cores)")
      ->check(CLI::Range(1, 1024));
  tune_cmd->add_option("--batch", tune.batch, "candidates built, checked and screened together")
      ->check(CLI::Range(1, 4096));
  tune_cmd
      ->add_option("--screen-samples", tune.screen_samples,
                   "timed samples of each candidate's screening")
      ->check(CLI::Range(3, 100000));
  tune_cmd->add_option(
      "--gpus", tune.gpus,
      "all, or N,M,...: one worker per device; screening batches are split over them, "
      "confirmation and the final comparison run on the first");
  tune_cmd->add_option(
      "--cluster", tune.cluster,
      "ray, or ray:ADDRESS: one worker per device of a Ray cluster (ray alone starts a local "
      "instance), as an actor on its node; see docs/cluster.md");
  tune_cmd->add_flag("--allow-mixed", tune.allow_mixed,
                     "with --gpus or --cluster: devices of different models in one run");
  tune_cmd->add_option(
      "--confirm", tune.confirm,
      "candidates re-measured in full: auto (top 3 and those whose screening overlaps the "
      "leader's, at most 8), all, or N (top N and overlaps, at most N)");
  tune_cmd->add_flag("--json", g.json, "JSON output (every evaluation)");
  tune_cmd->add_flag("-v,--verbose", g.verbose, "log each evaluation to stderr");

  OptimizeCliOptions optz;
  auto* opt_cmd = app.add_subcommand(
      "optimize", "the whole loop: profile, methods, branches, champion, ablation");
  add_selection(opt_cmd, optz.sel, false, "");
  opt_cmd->add_option("--iterations", optz.iterations, "iterations at most")
      ->check(CLI::Range(1, 100));
  opt_cmd->add_option("--branches", optz.branches, "branches per iteration")
      ->check(CLI::Range(1, 64));
  opt_cmd
      ->add_option("--patience", optz.patience,
                   "stop after this many iterations without improvement")
      ->check(CLI::Range(1, 100));
  opt_cmd->add_option("--seed", optz.seed, "seed of the branch tunings");
  opt_cmd->add_option("--start-kernel", optz.start_kernel,
                      "v0 (default: the first kernel without method toggles)");
  opt_cmd->add_option("--run", optz.run, "run directory (default kopt-runs/PROBLEM)");
  opt_cmd->add_flag("--resume", optz.resume, "continue the run in --run");
  opt_cmd->add_option("--max-time", optz.max_time_s, "time cap of each measurement (s)")
      ->check(CLI::PositiveNumber);
  opt_cmd->add_option("--experience-db", optz.experience_db,
                      "experience DB to learn from and write to");
  opt_cmd->add_flag("!--no-experience", optz.use_experience,
                    "neither consult nor record experience");
  opt_cmd->add_option("--proposer", optz.proposer,
                      "a command that writes each iteration's branches (analysis JSON on stdin; "
                      "see docs/optimize.md)");
  opt_cmd
      ->add_option("--budget-formula", optz.budget_formula,
                   "how the axis budget follows the profile: headroom (to the roofline) or "
                   "kernelflow (KernelFlow's gaps)")
      ->check(CLI::IsMember({"headroom", "kernelflow"}));
  opt_cmd
      ->add_option("--proposer-timeout", optz.proposer_timeout_s,
                   "seconds the proposer may take per iteration")
      ->check(CLI::PositiveNumber);
  opt_cmd->add_flag(
      "!--no-branch-profiles", optz.profile_branches,
      "profile only each iteration's champion, not every branch of a round (in one ncu session)");
  opt_cmd->add_flag(
      "!--no-sanitize", optz.sanitize,
      "accept a new champion without running it under compute-sanitizer (memcheck, racecheck)");
  opt_cmd->add_option(
      "--gpus", optz.gpus,
      "all, or N,M,...: one worker per device; a round's branches are measured one per worker, "
      "comparisons with the champion, profiles and checks on the first");
  opt_cmd->add_option(
      "--cluster", optz.cluster,
      "ray, or ray:ADDRESS: one worker per device of a Ray cluster, as --gpus does on one host");
  opt_cmd->add_flag("--allow-mixed", optz.allow_mixed,
                    "with --gpus or --cluster: devices of different models");
  opt_cmd->add_flag("--json", g.json, "print run.json at the end");
  opt_cmd->add_flag("-v,--verbose", g.verbose, "log progress to stderr");

  auto* iter_cmd =
      app.add_subcommand("iter", "the loop one step at a time; mask or unmask recorded versions");
  iter_cmd->require_subcommand(1);
  IterMaskCliOptions mask, unmask;
  unmask.mask = false;
  CLI::App* mask_cmds[2];
  int mi = 0;
  for (auto* m : {&mask, &unmask}) {
    auto* c = iter_cmd->add_subcommand(
        m->mask ? "mask" : "unmask",
        m->mask ? "keep versions on record but out of every decision" : "undo mask");
    c->add_option("run", m->run, "run directory")->required();
    c->add_option("--version", m->versions, "version number (repeatable)")->required();
    if (m->mask) c->add_option("--reason", m->reason, "why (kept in run.json)");
    c->add_flag("--json", g.json, "JSON output");
    mask_cmds[mi++] = c;
  }

  IterStepCliOptions steps[4];
  CLI::App* step_cmds[4];
  const char* step_names[4] = {"open", "branch", "close", "finalize"};
  const char* step_help[4] = {
      "profile the champion; write the headroom, budget, ranked suggestions (or a reasoned stop) "
      "and hypothesis.md",
      "add a branch (a kernel source an agent wrote) to the open iteration",
      "measure the branches, pick the champion, check SASS, attribute, judge the predictions, "
      "record",
      "end the run"};
  for (int i = 0; i < 4; ++i) {
    IterStepCliOptions& s = steps[i];
    s.step = step_names[i];
    auto* c = iter_cmd->add_subcommand(step_names[i], step_help[i]);
    c->add_option("run", s.run, "run directory")->required();
    if (s.step == "open")
      c->add_option("--problem", s.problem, "problem directory (for a new run)");
    if (s.step == "branch") {
      c->add_option("--file", s.file, "the branch's kernel source")->required();
      c->add_option(
          "--kernel", s.kernel,
          "which kernel of the problem it replaces (default: the one with method toggles)");
      c->add_option("--set", s.sets, "param value NAME=VALUE (repeatable)");
      c->add_option("--method", s.methods, "a method this branch applies (repeatable)");
      c->add_option("--ablates", s.ablates,
                    "this branch is the winner without this method (leave-one-out)");
      c->add_option("--hypothesis", s.hypothesis,
                    "what you expect this branch to do and why (recorded before measurement)");
      c->add_option(
          "--expect", s.expect,
          "a prediction METRIC:up|down[:AMOUNT] (repeatable): time, an alias such as "
          "dram_throughput or "
          "stall_long_scoreboard, or a metric of the open's profile; AMOUNT like 10% or 5");
    }
    if (s.step == "open")
      c->add_option("--budget-formula", s.budget_formula,
                    "how the axis budget follows the profile: headroom (to the roofline) or "
                    "kernelflow (KernelFlow's gaps)")
          ->check(CLI::IsMember({"headroom", "kernelflow"}));
    if (s.step == "open" || s.step == "close") {
      c->add_option("--arch", s.arch, "target architecture (default: the device's)");
      c->add_option("--device", s.device,
                    "device ordinal (CUDA, or OpenCL with --backend opencl: GPUs first)");
      c->add_option("--max-time", s.max_time_s, "time cap of each measurement (s)")
          ->check(CLI::PositiveNumber);
    }
    if (s.step == "close")
      c->add_flag(
          "!--no-sanitize", s.sanitize,
          "accept a new champion without running it under compute-sanitizer (memcheck, racecheck)");
    c->add_flag("--json", g.json, "print run.json");
    step_cmds[i] = c;
  }

  ReportCliOptions rep;
  auto* rep_cmd =
      app.add_subcommand("report", "report.md, benchmark.md and report.html from a run directory");
  rep_cmd->add_option("runs", rep.runs, "run directory (several with --leaderboard)")->required();
  rep_cmd->add_flag("--html", rep.html, "also write report.html (self-contained, SVG charts)");
  rep_cmd->add_flag("--leaderboard", rep.leaderboard,
                    "rank several runs by speedup and % of the ceiling");
  rep_cmd->add_option("--out", rep.out, "where to write (default: the run directory)");
  rep_cmd->add_flag("--json", g.json, "JSON output");

  auto* exp_cmd =
      app.add_subcommand("experience", "the experience database: what worked before, where");
  exp_cmd->require_subcommand(1);
  const char* exp_actions[] = {"add",   "recommend", "search", "list",
                               "merge", "sync",      "stats",  "predictions"};
  ExperienceCliOptions exp_opts[8];
  CLI::App* exp_cmds[8];
  for (int i = 0; i < 8; ++i) {
    ExperienceCliOptions& e = exp_opts[i];
    e.action = exp_actions[i];
    auto* c = exp_cmd->add_subcommand(exp_actions[i]);
    c->add_option(
        "--db", e.db,
        "experience DB (default: $KOPT_EXPERIENCE_DB or ~/.local/share/kopt/experience.db)");
    c->add_flag("--json", g.json, "JSON output");
    bool lists = e.action == "list" || e.action == "predictions";
    if (e.action == "add" || e.action == "recommend" || lists) {
      c->add_option("--family", e.family, "kernel family (softmax, gemm, ...)");
      c->add_option("--chip", e.chip, "sm_90, gfx942, ...");
      if (e.action != "predictions")
        c->add_option("--bottleneck", e.bottleneck, "memory-bound, compute-bound, ...");
    }
    if (e.action == "add" || lists) c->add_option("--method", e.method, "method id");
    if (e.action == "add") {
      c->add_option("--before", e.before_s, "time without the method (s)");
      c->add_option("--after", e.after_s, "time with it (s)");
      c->add_option("--param", e.params, "NAME=VALUE (repeatable)");
      c->add_option("--sass", e.sass, "SASS verdict");
      c->add_option("--note", e.note, "a note");
    }
    if (lists) {
      c->add_option("--verdict", e.verdict,
                    e.action == "list" ? "success, neutral, failure or regression"
                                       : "confirmed, short, refuted or unmeasured");
      c->add_option("--limit", e.limit, "at most this many");
    }
    if (e.action == "search") {
      c->add_option("text", e.text, "text found in any field")->required();
      c->add_option("--limit", e.limit, "at most this many");
    }
    if (e.action == "merge")
      c->add_option("other", e.file, "another kopt experience DB")->required();
    if (e.action == "sync") {
      c->add_option("direction", e.direction, "export or import")
          ->required()
          ->check(CLI::IsMember({"export", "import"}));
      c->add_option("file", e.file, "JSON-lines file (one record a line)")->required();
    }
    if (e.action == "stats")
      c->add_option("--by", e.by, "method, bottleneck or chip")
          ->check(CLI::IsMember({"method", "bottleneck", "chip"}));
    exp_cmds[i] = c;
  }

  auto* mcp_cmd = app.add_subcommand(
      "mcp", "a Model Context Protocol server on stdio (JSON-RPC 2.0) for coding agents");

  SpecsCliOptions specs;
  auto* specs_cmd =
      app.add_subcommand("specs", "the hardware spec table, with a source for every value");
  specs_cmd->add_option("gpu", specs.gpu,
                        "an id (h100-sxm) or a device name (\"NVIDIA H100 80GB HBM3\")");
  specs_cmd->add_flag("--json", g.json, "JSON output");

  TargetCliOptions target;
  auto* target_cmd =
      app.add_subcommand("target", "write target.md: roofs with sources, bound, stop conditions");
  add_selection(target_cmd, target.sel, false, "");
  target_cmd->add_option("--gpu", target.gpu, "a GPU of the spec table (default: this machine's)");
  target_cmd
      ->add_option("--precision", target.precision,
                   "compute roof: fp32, fp64, fp16, bf16, tf32, fp8, int8")
      ->check(CLI::IsMember({"fp32", "fp64", "fp16", "bf16", "tf32", "fp8", "int8"}));
  target_cmd->add_option("--out", target.out, "where to write target.md");
  target_cmd->add_flag("--json", g.json, "JSON output");

  ImportCliOptions import_opts;
  auto* import_cmd =
      app.add_subcommand("import", "make a problem directory from another tool's problem");
  import_cmd->require_subcommand(1);
  auto* import_kb_cmd = import_cmd->add_subcommand(
      "kernelbench",
      "a KernelBench problem (Model, get_inputs, get_init_inputs) -> kopt.toml, ref.py, model.py");
  import_kb_cmd
      ->add_option("file", import_opts.file, "the KernelBench problem (.py), or a folder of them")
      ->required();
  import_kb_cmd
      ->add_option(
          "--out", import_opts.out,
          "the problem directory to write (for a folder: one directory per problem under it)")
      ->required();
  import_kb_cmd->add_flag(
      "--force", import_opts.force,
      "replace the imported files of an earlier import (a folder: import and evaluate all again)");
  import_kb_cmd->add_option("--jobs", import_opts.jobs,
                            "a folder: imports at a time (default: the machine's cores)");
  import_kb_cmd->add_flag("--check", import_opts.check,
                          "a folder: run each problem's reference once");
  import_kb_cmd->add_flag(
      "--vs-torch", import_opts.vs_torch,
      "a folder: time each problem's PyTorch baselines, eager and torch.compile");
  import_kb_cmd->add_option("--max-time", import_opts.max_time_s,
                            "a folder: seconds of timing per baseline (default 1)");
  import_kb_cmd->add_option("--report", import_opts.report,
                            "a folder: also write the summary table to this markdown file");
  import_kb_cmd->add_option("--device", import_opts.device,
                            "GPU ordinal for --check and --vs-torch");
  import_kb_cmd->add_flag("--json", g.json, "JSON output");

  int worker_device = 0;
  std::vector<std::string> once_jobs;
  int once_warmup = 0;
  int once_repeat = 1;
  auto* worker_cmd = app.add_subcommand("worker", "internal: the process that owns a GPU");
  worker_cmd->group("");
  worker_cmd->add_option("--device", worker_device);
  worker_cmd->add_option(
      "--once", once_jobs,
      "run this job file (for ncu; repeatable: in order, each in its NVTX range) instead of "
      "serving the protocol");
  worker_cmd
      ->add_option("--warmup", once_warmup, "with --once: launches of each job before its range")
      ->check(CLI::Range(0, 1000));
  worker_cmd
      ->add_option("--repeat", once_repeat, "with --once: launches of each job inside its range")
      ->check(CLI::Range(1, 1000));
  auto* probe_cmd =
      app.add_subcommand("probe-kernel", "internal: launch one tiny kernel (for ncu)");
  probe_cmd->group("");
  probe_cmd->add_option("--device", worker_device);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  set_backend_choice(backend);
  try {
    if (*env_cmd) return run_env(g, env);
    if (*check_cmd) return run_check_command(g, check);
    if (*bench_cmd) return run_bench_command(g, bench);
    if (*ceil_cmd) return run_ceilings_command(g, ceil);
    if (*sass_cmd) return run_sass_command(g, sass);
    if (*prof_cmd) return run_profile_command(g, prof);
    if (*an_cmd) return run_analyze_command(g, an);
    if (*specs_cmd) return run_specs_command(g, specs);
    if (*tune_cmd) return run_tune_command(g, tune);
    if (*opt_cmd) return run_optimize_command(g, optz);
    if (*rep_cmd) return run_report_command(g, rep);
    if (*mcp_cmd) return run_mcp_command();
    for (int i = 0; i < 8; ++i)
      if (*exp_cmds[i]) return run_experience_command(g, exp_opts[i]);
    for (int i = 0; i < 4; ++i)
      if (*step_cmds[i]) return run_iter_step_command(g, steps[i]);
    if (*mask_cmds[0]) return run_iter_mask_command(g, mask);
    if (*mask_cmds[1]) return run_iter_mask_command(g, unmask);
    if (*target_cmd) return run_target_command(g, target);
    if (*import_kb_cmd) return run_import_kernelbench_command(g, import_opts);
    if (*worker_cmd)
      return once_jobs.empty() ? run_worker_command(worker_device, backend)
                               : run_worker_once_command(worker_device, backend, once_jobs,
                                                         once_warmup, once_repeat);
    if (*probe_cmd) return run_probe_kernel_command(worker_device);
  } catch (const std::exception& e) {
    return report_error(g, "kopt", 4, std::string("internal error: ") + e.what());
  }
  return 2;
}
