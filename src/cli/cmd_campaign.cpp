// `kopt campaign SOURCE... --out DIR`: a suite of problems through check, bench, tune and
// optimize with a budget each, resumable, answered with one leaderboard (campaign/campaign.hpp).
#include <iostream>

#include "commands.hpp"
#include "kopt/campaign/campaign.hpp"
#include "kopt/campaign/leaderboard.hpp"

namespace kopt::cli {
namespace {

struct CampaignCliOptions {
  std::vector<std::string> sources;
  std::string out = "kopt-campaign";
  std::string candidates;
  std::string plan = "check,bench,tune";
  double budget_s = 600;
  std::size_t evals = 0;
  double max_time_s = 5;
  std::string gpus, cluster;
  unsigned jobs = 0;
  bool force = false;
  bool report = false;
};

int run_campaign_command(const GlobalOptions& g, const CampaignCliOptions& o) {
  namespace fs = std::filesystem;
  auto plan = campaign::parse_plan(o.plan);
  if (!plan) return report_error(g, "campaign", 2, plan.error().to_string());
  campaign::CampaignState state;
  if (o.report) {
    auto loaded = campaign::load_campaign_state(o.out);
    if (!loaded)
      return report_error(g, "campaign", 2,
                          o.out + ": no campaign here (" + loaded.error().message + ")");
    state = *loaded;
  } else {
    campaign::CampaignOptions co;
    for (const auto& s : o.sources) co.sources.emplace_back(s);
    co.out = fs::absolute(o.out);
    co.candidates = o.candidates.empty() ? fs::path{} : fs::absolute(o.candidates);
    co.plan = *plan;
    co.budget_s = o.budget_s;
    co.evals = o.evals;
    co.max_time_s = o.max_time_s;
    co.gpus = o.gpus;
    co.cluster = o.cluster;
    co.backend = g.backend == "auto" ? "" : g.backend;
    co.jobs = o.jobs;
    co.force = o.force;
    co.log = [](const std::string& line) { std::cerr << "kopt campaign: " << line << "\n"; };
    auto ran = campaign::run_campaign(co, campaign::system_step_runner());
    if (!ran)
      return report_error(g, "campaign", exit_code(ran.error().kind), ran.error().to_string());
    state = *ran;
    if (state.added_to_running) {
      std::string line = "another kopt campaign runs in " + o.out +
                         ": the sources were added to it; it takes their problems after the "
                         "problem it is on";
      if (g.json)
        std::cout << nlohmann::json{{"schema_version", 1},      {"command", "campaign"},
                                    {"added_to_running", true}, {"sources", o.sources},
                                    {"message", line},          {"exit_code", 0}}
                         .dump(2)
                  << "\n";
      else
        std::cout << line << "\n";
      return 0;
    }
  }
  auto board = campaign::make_leaderboard(state, o.out);
  if (auto w = campaign::write_leaderboard_files(board, o.out); !w)
    return report_error(g, "campaign", 3, w.error().to_string());
  if (g.json) {
    nlohmann::json j = campaign::to_json(state);
    j["leaderboard"] = campaign::to_json(board);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << campaign::leaderboard_markdown(board) << "\nwritten: " << o.out
              << "/leaderboard.md, leaderboard.html, leaderboard.json (records: " << o.out
              << "/problems/)\n";
  }
  return state.exit_code();
}

}  // namespace

std::vector<Command> campaign_commands(const GlobalRef& g) {
  auto o = std::make_shared<CampaignCliOptions>();
  Command c{.path = {"campaign"},
            .help =
                "a suite of problems (folders of kopt.toml problems, KernelBench files or a "
                "level) through check, bench, tune and optimize with a budget each, "
                "resumable; one leaderboard (md, HTML, JSON) with fast_p",
            .run = [g, o] { return run_campaign_command(*g, *o); },
            .storage = o};
  c.options = {
      {.names = "sources",
       .help = "folders of problems, problem directories, KernelBench files (default: the "
               "campaign's own, to resume it)",
       .target = &o->sources},
      {.names = "--out",
       .help = "the campaign's folder (state, records, leaderboard)",
       .target = &o->out},
      {.names = "--candidates",
       .help = "a folder whose NAME/kopt.toml (with its kernels) stands for KernelBench's NAME.py",
       .target = &o->candidates},
      {.names = "--plan",
       .help = "steps per problem: check, bench (vs torch eager and torch.compile), tune (each "
               "kernel with a space), optimize",
       .target = &o->plan},
      {.names = "--budget",
       .help = "seconds per problem, every step together (a step is stopped at it)",
       .target = &o->budget_s,
       .positive = true},
      {.names = "--evals",
       .help = "tune: evaluations per kernel (0: its time share alone)",
       .target = &o->evals},
      {.names = "--max-time",
       .help = "bench: seconds of timing per variant",
       .target = &o->max_time_s,
       .positive = true},
      {.names = "--gpus",
       .help = "all or N,M,...: one problem per device at a time",
       .target = &o->gpus},
      {.names = "--cluster",
       .help = "ray or ray:ADDRESS: tune and optimize spread over a Ray cluster's devices",
       .target = &o->cluster},
      {.names = "--jobs",
       .help = "KernelBench imports at a time (0: up to 4)",
       .target = &o->jobs,
       .range = {{0, 256}}},
      {.names = "--force", .help = "every step again", .target = &o->force},
      {.names = "--report",
       .help = "write the leaderboard from the records, run nothing",
       .target = &o->report},
  };
  return {c};
}

}  // namespace kopt::cli
