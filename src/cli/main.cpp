#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"

int main(int argc, char** argv) {
  using namespace kopt::cli;
  CLI::App app{"kopt: evidence-driven GPU kernel optimization"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kopt ") + KOPT_VERSION);
  GlobalOptions g;
  app.add_flag("--json", g.json, "print one JSON document on stdout (logs go to stderr)");
  app.add_flag("-v,--verbose", g.verbose, "log progress to stderr");

  EnvOptions env;
  auto* env_cmd = app.add_subcommand("env", "what is here: GPUs, driver, CUDA, NVRTC, tools, Python");
  env_cmd->add_flag("--json", g.json, "JSON output");
  env_cmd->add_flag("!--no-ncu-probe", env.probe_ncu, "do not run a tiny profile to test counter access");

  CheckCliOptions check;
  auto* check_cmd = app.add_subcommand("check", "correctness of a problem's kernels over several seeds");
  check_cmd->add_option("problem", check.problem, "problem directory (or its kopt.toml)")->required();
  check_cmd->add_option("--set", check.sets, "parameter value NAME=VALUE (repeatable)");
  check_cmd->add_option("--dim", check.dims, "override a dim NAME=VALUE (repeatable)");
  check_cmd->add_option("--kernel", check.kernels, "check only this kernel (repeatable)");
  check_cmd->add_option("--seeds", check.seeds, "number of seeds")->check(CLI::Range(1, 1000));
  check_cmd->add_option("--first-seed", check.first_seed, "first seed (then +1 each)");
  check_cmd->add_option("--arch", check.arch, "target architecture, e.g. sm_90 (default: the device's)");
  check_cmd->add_option("--timeout", check.timeout_s, "seconds one kernel run may take (watchdog)")
      ->check(CLI::PositiveNumber);
  check_cmd->add_option("--device", check.device, "CUDA device ordinal");
  check_cmd->add_flag("--json", g.json, "JSON output");
  check_cmd->add_flag("-v,--verbose", g.verbose, "log progress to stderr");

  int worker_device = 0;
  auto* worker_cmd = app.add_subcommand("worker", "internal: the process that owns a GPU");
  worker_cmd->group("");
  worker_cmd->add_option("--device", worker_device);
  auto* probe_cmd = app.add_subcommand("probe-kernel", "internal: launch one tiny kernel (for ncu)");
  probe_cmd->group("");
  probe_cmd->add_option("--device", worker_device);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    if (*env_cmd) return run_env(g, env);
    if (*check_cmd) return run_check_command(g, check);
    if (*worker_cmd) return run_worker_command(worker_device);
    if (*probe_cmd) return run_probe_kernel_command(worker_device);
  } catch (const std::exception& e) {
    return report_error(g, "kopt", 4, std::string("internal error: ") + e.what());
  }
  return 2;
}
