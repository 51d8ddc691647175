// The campaign's runner (campaign.hpp): imports ahead on a pool of threads, then one lane per
// device taking the next problem with steps to do, each step one of kopt's commands as a child
// process with the problem's remaining budget as its deadline; the state saved after every step.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>

#include "campaign_files.hpp"
#include "kopt/backend/device_family.hpp"
#include "kopt/campaign/leaderboard.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/text.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/problem/kernelbench.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/tune/search_space.hpp"

namespace kopt::campaign {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The steps a problem's plan gives it, its earlier records kept where they are the same step.
std::vector<StepRecord> planned_steps(const CampaignProblem& p, const CampaignPlan& plan,
                                      DeviceFamily family) {
  std::vector<StepRecord> want;
  if (p.kernelbench) want.push_back({.kind = StepKind::import});
  std::error_code ec;
  bool written = fs::exists(p.dir / "kopt.toml", ec);
  std::optional<Problem> problem;
  if (written)
    if (auto loaded = load_problem(p.dir))
      // The kernels this device runs (a CUDA kernel has nothing to tune on an OpenCL device).
      if (select_runnable(*loaded, runnable_languages(family), true)) problem = std::move(*loaded);
  // A problem that does not load still gets its check: the step says what is wrong.
  if (!p.kernelbench || written) {
    if (plan.check) want.push_back({.kind = StepKind::check});
    if (plan.bench) want.push_back({.kind = StepKind::bench});
  }
  if (problem) {
    if (plan.tune)
      for (const auto& k : problem->kernels)
        if (tune::SearchSpace::from_kernel(k, problem->dim_scope()).size() > 1)
          want.push_back({.kind = StepKind::tune, .kernel = k.name});
    if (plan.optimize && !problem->kernels.empty()) want.push_back({.kind = StepKind::optimize});
  }
  for (auto& w : want)
    for (const auto& s : p.steps)
      if (s.kind == w.kind && s.kernel == w.kernel) w = s;
  return want;
}

// Imported by an earlier kopt: its kopt.toml lacks this kopt's import format stamp.
bool import_outdated(const CampaignProblem& p) {
  if (!p.kernelbench) return false;
  auto text = read_text_file(p.dir / "kopt.toml");
  return text && !kernelbench_import_current(*text);
}

bool runnable(const StepRecord& s, bool retry_environment) {
  return s.status == StepStatus::pending || s.status == StepStatus::running ||
         (retry_environment && s.status == StepStatus::environment);
}

// A line of the child's stderr worth showing: its last non-empty one.
std::string last_line(const std::string& text) {
  std::string t = trim(text);
  std::size_t nl = t.rfind('\n');
  std::string line = nl == std::string::npos ? t : t.substr(nl + 1);
  return line.size() > 400 ? line.substr(0, 397) + "..." : line;
}

struct Runner {
  const CampaignOptions& o;
  const StepRunner& run;
  CampaignState& state;
  StateFile& file;
  std::mutex m;
  Clock::time_point t0 = Clock::now();
  std::vector<std::string> known_sources;
  DeviceFamily family = DeviceFamily::cuda;

  void save() {
    CampaignState copy;
    {
      std::lock_guard lock(m);
      copy = state;
      copy.wall_s = seconds_since(t0);
    }
    file.save(copy);
  }

  CampaignProblem* find(const std::string& name) {
    for (auto& p : state.problems)
      if (p.name == name) return &p;
    return nullptr;
  }

  // Sources added by another invocation since the last look: their problems join the queue.
  void take_added_sources() {
    std::vector<fs::path> fresh;
    for (const auto& s : added_sources(o.out))
      if (std::find(known_sources.begin(), known_sources.end(), s) == known_sources.end()) {
        known_sources.push_back(s);
        fresh.push_back(s);
      }
    if (fresh.empty()) return;
    auto found = discover_problems(fresh, o.out, o.candidates);
    std::lock_guard lock(m);
    state.sources = known_sources;
    if (!found) {
      o.log("added sources refused: " + found.error().to_string());
      return;
    }
    for (auto& p : *found)
      if (!find(p.name)) {
        p.fingerprint = fingerprint_of(p);
        p.steps = planned_steps(p, state.plan, family);
        o.log("added: " + p.name);
        state.problems.push_back(std::move(p));
      }
  }

  std::vector<std::string> step_argv(const CampaignProblem& p, const StepRecord& s,
                                     const std::string& device, double remaining_s) {
    std::vector<std::string> a{o.kopt.string(), "--json"};
    if (!o.backend.empty()) a.insert(a.end(), {"--backend", o.backend});
    fs::path room = problem_room(o.out, p.name);
    auto on_device = [&] {
      if (!device.empty()) a.insert(a.end(), {"--device", device});
    };
    // What the command runs on: the problem directory, or a ModelNew answer's copy with the
    // KernelBench file as its reference (kopt infers the problem beside the copy).
    std::vector<std::string> target{p.dir.string()};
    if (!p.modelnew.empty()) {
      fs::path copy = p.dir.parent_path() / p.modelnew.filename();
      std::error_code ec;
      fs::create_directories(copy.parent_path(), ec);
      fs::copy_file(p.modelnew, copy, fs::copy_options::overwrite_existing, ec);
      target = {copy.string(), "--ref", p.source.string()};
    }
    switch (s.kind) {
      case StepKind::import:
        a.insert(a.end(),
                 {"import", "kernelbench", p.source.string(), "--out", p.dir.string(), "--force"});
        break;
      case StepKind::check: {
        a.push_back("check");
        a.insert(a.end(), target.begin(), target.end());
        // No candidate: the check is whether the reference runs, and one seed says it (the
        // seeds, the wide seed and the secret seed are there to judge kernels).
        auto problem = load_problem(p.dir);
        if (problem && problem->kernels.empty()) a.insert(a.end(), {"--seeds", "1"});
        on_device();
        break;
      }
      case StepKind::bench: {
        a.push_back("bench");
        a.insert(a.end(), target.begin(), target.end());
        a.insert(a.end(), {"--max-time", fmt::format("{}", o.max_time_s)});
        auto problem = load_problem(p.dir);
        if (problem && problem->reference.kind == ReferenceKind::python) a.push_back("--vs-torch");
        on_device();
        break;
      }
      case StepKind::tune: {
        // Its share of what is left: the tune and optimize steps still to run split it, and
        // confirmation after the search gets a fifth of the share.
        std::size_t later = 0;
        for (const auto& x : p.steps)
          later += (x.kind == StepKind::tune || x.kind == StepKind::optimize) && runnable(x, true);
        double share = remaining_s / static_cast<double>(std::max<std::size_t>(1, later));
        a.push_back("tune");
        a.insert(a.end(), target.begin(), target.end());
        a.insert(a.end(), {"--kernel", s.kernel, "--time-budget",
                           fmt::format("{:.0f}", std::max(5.0, 0.8 * share)), "--out",
                           (room / "tune").string()});
        if (o.evals > 0) a.insert(a.end(), {"--budget", std::to_string(o.evals)});
        if (!o.cluster.empty()) a.insert(a.end(), {"--cluster", o.cluster});
        on_device();
        break;
      }
      case StepKind::optimize: {
        a.push_back("optimize");
        a.insert(a.end(), target.begin(), target.end());
        a.insert(a.end(), {"--run", (room / "run").string()});
        std::error_code ec;
        if (fs::exists(room / "run" / "run.json", ec)) a.push_back("--resume");
        if (!o.cluster.empty()) a.insert(a.end(), {"--cluster", o.cluster});
        on_device();
        break;
      }
    }
    return a;
  }

  // Runs one step of `name` (a copy of its record is worked on, then written back).
  void run_step(const std::string& name, std::size_t index, const std::string& device) {
    CampaignProblem p;
    {
      std::lock_guard lock(m);
      p = *find(name);
      p.steps[index].status = StepStatus::running;
      p.steps[index].device = device;
      ++p.steps[index].attempts;
      *find(name) = p;
    }
    save();
    StepRecord s = p.steps[index];
    double remaining = o.budget_s - p.spent_s;
    fs::path room = problem_room(o.out, p.name);
    std::error_code ec;
    fs::create_directories(room, ec);
    if (remaining <= 0 && s.kind != StepKind::import) {
      s.status = StepStatus::budget;
      s.reason = fmt::format("the budget of {:.0f} s was spent before this step", o.budget_s);
    } else {
      auto argv = step_argv(p, s, device, remaining);
      // An import is not the problem's work: it has its own generous deadline.
      double deadline = s.kind == StepKind::import ? std::max(remaining, 1800.0) : remaining;
      auto t = Clock::now();
      CommandResult r = run(argv, std::chrono::milliseconds(static_cast<long>(deadline * 1000)));
      s.wall_s = seconds_since(t);
      (void)write_text_atomic(room / s.log(), r.err);
      if (!r.out.empty()) (void)write_text_atomic(room / s.record(), r.out);
      s.exit_code = r.exit_code;
      std::string error;
      try {
        json doc = json::parse(r.out);
        if (doc.contains("error") && doc["error"].is_string()) error = doc["error"];
      } catch (const std::exception&) {
      }
      if (error.empty()) error = last_line(r.err);
      if (!r.started) {
        s.status = StepStatus::environment;
        s.reason = "kopt could not be started: " + o.kopt.string();
      } else if (r.timed_out) {
        s.status = StepStatus::budget;
        s.reason =
            fmt::format("killed at the budget ({:.0f} s of {:.0f} s left)", deadline, o.budget_s);
      } else if (r.signal != 0) {
        s.status = StepStatus::environment;
        s.reason = fmt::format("kopt {} died of signal {}", name_of(s.kind), r.signal);
      } else if (r.exit_code == 0 || r.exit_code == 1) {
        s.status = StepStatus::done;
        s.reason = r.exit_code == 1 ? error : "";
      } else if (r.exit_code == 2) {
        s.status = StepStatus::refused;
        s.reason = error;
      } else {
        s.status = StepStatus::environment;
        s.reason = fmt::format("exit {}: {}", r.exit_code, error);
      }
      if (s.kind != StepKind::import) p.spent_s += s.wall_s;
    }
    {
      std::lock_guard lock(m);
      CampaignProblem& live = *find(name);
      live.steps[index] = s;
      live.spent_s = p.spent_s;
      // An import that landed gives the problem its steps.
      if (s.kind == StepKind::import && s.status == StepStatus::done)
        live.steps = planned_steps(live, state.plan, family);
    }
    o.log(fmt::format("[{:.0f} s] {}: {}{} {} ({:.1f} s){}", seconds_since(t0), name,
                      name_of(s.kind), s.kernel.empty() ? "" : " " + s.kernel, name_of(s.status),
                      s.wall_s, s.reason.empty() ? "" : ": " + s.reason));
    save();
  }

  // The next step of a problem to run (each at most once per lane's pass), or nullopt; the
  // steps after an import that did not land wait for it.
  std::optional<std::size_t> next_step(const CampaignProblem& p, bool retry_environment,
                                       const std::set<std::string>& tried) {
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
      const StepRecord& s = p.steps[i];
      if (runnable(s, retry_environment) && !tried.count(p.name + "/" + s.record())) return i;
      if (s.kind == StepKind::import && s.status != StepStatus::done) return std::nullopt;
    }
    return std::nullopt;
  }

  // A lane: problem after problem, each to its end, on one device.
  void lane(const std::string& device, std::vector<std::string>& claimed, bool retry_environment) {
    std::set<std::string> tried;
    for (;;) {
      take_added_sources();
      std::string name;
      {
        std::lock_guard lock(m);
        for (const auto& p : state.problems)
          if (std::find(claimed.begin(), claimed.end(), p.name) == claimed.end() &&
              next_step(p, retry_environment, tried)) {
            name = p.name;
            claimed.push_back(name);
            break;
          }
      }
      if (name.empty()) return;
      for (;;) {
        std::optional<std::size_t> i;
        {
          std::lock_guard lock(m);
          i = next_step(*find(name), retry_environment, tried);
          if (i) tried.insert(name + "/" + find(name)->steps[*i].record());
        }
        if (!i) break;
        run_step(name, *i, device);
      }
      write_leaderboard();
    }
  }

  void write_leaderboard() {
    CampaignState copy;
    {
      std::lock_guard lock(m);
      copy = state;
    }
    auto board = make_leaderboard(copy, o.out);
    (void)write_leaderboard_files(board, o.out);
  }

  // KernelBench imports on a pool of threads (Python on the CPU), ahead of the lanes.
  void imports() {
    std::vector<std::string> names;
    for (const auto& p : state.problems)
      if (!p.steps.empty() && p.steps[0].kind == StepKind::import && runnable(p.steps[0], true))
        names.push_back(p.name);
    unsigned jobs =
        o.jobs > 0 ? o.jobs : std::min(4u, std::max(1u, std::thread::hardware_concurrency()));
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t i; (i = next++) < names.size();) run_step(names[i], 0, "");
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < std::min<std::size_t>(jobs, names.size()); ++t)
      pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
};

}  // namespace

StepRunner system_step_runner() {
  return [](const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
    SystemCommandRunner r;
    return r.run(argv, timeout);
  };
}

Expected<CampaignState> run_campaign(const CampaignOptions& o, const StepRunner& run) {
  std::error_code ec;
  CampaignState state;
  auto earlier = fs::exists(o.out / "campaign.json", ec) ? load_campaign_state(o.out)
                                                         : Expected<CampaignState>{};
  if (!earlier) return Unexpected(earlier.error());
  if (earlier->budget_s > 0 || !earlier->problems.empty()) state = *earlier;
  std::vector<std::string> mine;  // the sources named now
  for (const auto& s : o.sources) mine.push_back(fs::absolute(s).lexically_normal().string());
  std::vector<std::string> sources = state.sources;
  for (const auto& list : {mine, added_sources(o.out)})
    for (const auto& s : list)
      if (std::find(sources.begin(), sources.end(), s) == sources.end()) sources.push_back(s);
  if (sources.empty())
    return Unexpected(
        bad_input("name a folder of problems, a problem or a KernelBench file", "SOURCE"));
  // Bad input is refused before anything is written: no campaign folder is left behind.
  std::vector<fs::path> paths(sources.begin(), sources.end());
  auto found = discover_problems(paths, o.out, o.candidates);
  if (!found) return Unexpected(found.error());

  fs::create_directories(o.out, ec);
  if (ec)
    return Unexpected(
        bad_input("cannot create the campaign folder: " + ec.message(), o.out.string()));
  DirectoryLock lock(o.out);
  if (!lock.held()) {
    // Another invocation runs this campaign: it takes these sources between problems.
    if (auto w = add_sources(o.out, mine); !w) return Unexpected(w.error());
    state.added_to_running = true;
    return state;
  }

  state.sources = sources;
  state.candidates = o.candidates.empty() ? "" : fs::absolute(o.candidates).string();
  state.plan = o.plan;
  state.budget_s = o.budget_s;
  DeviceFamily family = evaluate::choose_device_family(o.backend.empty() ? "auto" : o.backend);
  std::vector<CampaignProblem> problems;
  for (auto& p : *found) {
    p.fingerprint = fingerprint_of(p);
    for (const auto& e : state.problems)
      if (e.name == p.name && e.fingerprint == p.fingerprint && !o.force) {
        p.steps = e.steps;
        p.spent_s = e.spent_s;
      }
    // An import an earlier kopt wrote is imported again, and what ran against it runs again:
    // its ref.py decides how the reference runs (the KernelBench batch does the same).
    if (!p.steps.empty() && import_outdated(p)) {
      o.log(p.name + ": imported by an earlier kopt; imported again, and its steps run again");
      p.steps.clear();
    }
    // Interrupted or failed by the machine: run again; at the budget: again only if the
    // budget has grown since.
    for (auto& s : p.steps)
      if (s.status == StepStatus::running || s.status == StepStatus::environment ||
          (s.status == StepStatus::budget && p.spent_s < o.budget_s))
        s.status = StepStatus::pending;
    p.steps = planned_steps(p, o.plan, family);
    problems.push_back(std::move(p));
  }
  // Problems of an earlier invocation that no source names now are kept, with their records.
  for (const auto& e : state.problems)
    if (std::none_of(problems.begin(), problems.end(), [&](auto& p) { return p.name == e.name; }))
      problems.push_back(e);
  state.problems = std::move(problems);

  std::vector<std::string> devices{""};
  if (!o.gpus.empty() && o.cluster.empty()) {
    auto ordinals = evaluate::select_devices(family, o.gpus, 0);
    if (!ordinals) return Unexpected(ordinals.error());
    devices.clear();
    for (int d : *ordinals) devices.push_back(std::to_string(d));
  }

  StateFile file(o.out);
  Runner r{o, run, state, file};
  r.known_sources = sources;
  r.family = family;
  r.save();
  r.imports();
  std::vector<std::string> claimed;
  std::vector<std::thread> lanes;
  for (const auto& d : devices) lanes.emplace_back([&, d] { r.lane(d, claimed, false); });
  for (auto& t : lanes) t.join();
  // What the machine failed, once more, alone: no other lane's memory beside it.
  claimed.clear();
  r.lane(devices.front(), claimed, true);
  r.write_leaderboard();
  state.wall_s = seconds_since(r.t0);
  file.save(state);
  return state;
}

}  // namespace kopt::campaign
