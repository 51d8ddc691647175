// A campaign's leaderboard rows from its records (leaderboard.hpp): each problem's check, bench,
// tune and optimize documents, read back as the commands wrote them.
#include "kopt/campaign/leaderboard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "campaign_files.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/bench.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/store/run_state.hpp"

namespace kopt::campaign {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<json> read_record(const fs::path& file) {
  auto text = read_text_file(file);
  if (!text) return std::nullopt;
  try {
    return json::parse(*text);
  } catch (const std::exception&) {
    return std::nullopt;  // a step killed while it wrote: its record is not there
  }
}

// A command's document at each of its shapes: [(label, result)], one ("", doc) without shapes.
std::vector<std::pair<std::string, json>> per_shape(const json& doc) {
  std::vector<std::pair<std::string, json>> out;
  if (doc.contains("shapes") && doc["shapes"].is_array()) {
    for (const auto& s : doc["shapes"])
      out.emplace_back(s.value("label", ""), s.value("result", json{}));
  } else {
    out.emplace_back("", doc);
  }
  return out;
}

std::string point_text(const std::string& kernel, const json& params) {
  std::string out = kernel;
  if (params.is_object())
    for (const auto& [k, v] : params.items()) out += " " + k + "=" + v.dump();
  return out;
}

bool is_compile_row(const std::string& kernel) {
  return kernel.rfind("torch.compile", 0) == 0;
}

// Offers a timed candidate to a row; the fastest stays.
void offer(LeaderboardRow& row, const std::string& what, const std::string& from, double median) {
  if (median <= 0) return;
  if (!row.time_s || median < *row.time_s) {
    row.time_s = median;
    row.best = what;
    row.best_from = from;
  }
}

// A bench result at one shape: its baselines, candidates, the floor and the bound.
void read_bench(const json& r, LeaderboardRow& row, double& floor_s) {
  for (const auto& v : r.value("variants", json::array())) {
    std::string kernel = v.value("kernel", "");
    std::string status = v.value("status", "");
    double median = v.contains("summary") ? v["summary"].value("median", 0.0) : 0.0;
    if (status == "ok" && v.value("floor_s", 0.0) > 0) floor_s = v.value("floor_s", 0.0);
    if (status == "ok" && row.bound.empty()) {
      double bw = v.value("pct_bandwidth_ceiling", 0.0), fl = v.value("pct_compute_ceiling", 0.0);
      if (bw > 0 || fl > 0) row.bound = bw >= fl ? "memory" : "compute";
    }
    if (evaluate::is_torch_eager_row(kernel)) {
      if (status == "ok")
        row.eager_s = median;
      else
        row.notes.push_back("eager " + status + ": " + v.value("error", ""));
    } else if (is_compile_row(kernel)) {
      if (status == "ok")
        row.compile_s = median;
      else
        row.notes.push_back("torch.compile " + status + ": " + v.value("error", "").substr(0, 160));
    } else if (status == "ok") {
      offer(row, point_text(kernel, v.value("params", json::object())), "bench", median);
    } else {
      row.causes.push_back(kernel + ": " + status);
    }
  }
}

// The candidates a check failed (each kernel's status other than passed).
void read_check(const json& r, LeaderboardRow& row) {
  for (const auto& k : r.value("kernels", json::array()))
    if (k.value("status", "") != "passed") {
      std::string cause = k.value("kernel", "?") + ": " + k.value("status", "?");
      if (std::find(row.causes.begin(), row.causes.end(), cause) == row.causes.end())
        row.causes.push_back(cause);
    }
  if (r.contains("device_error") && r["device_error"].is_string() &&
      !r["device_error"].get<std::string>().empty())
    row.notes.push_back("reference: " + r["device_error"].get<std::string>());
}

const StepRecord* step_of(const CampaignProblem& p, StepKind kind) {
  for (const auto& s : p.steps)
    if (s.kind == kind) return &s;
  return nullptr;
}

// What ended the problem's work, from its steps (the first that did not run to its end) and the
// optimize run's own stop reason.
std::string stopped_by(const CampaignProblem& p, const RunState* run,
                       std::optional<RowStatus>& blocking) {
  for (const auto& s : p.steps) {
    std::string step = std::string(name_of(s.kind)) + (s.kernel.empty() ? "" : " " + s.kernel);
    switch (s.status) {
      case StepStatus::refused:
        blocking = RowStatus::refused;
        return step + " refused: " + s.reason;
      case StepStatus::environment:
        blocking = RowStatus::environment;
        return step + ": the machine failed it (" + s.reason + "); a resume runs it again";
      case StepStatus::budget:
        blocking = RowStatus::budget;
        return step + ": " + s.reason;
      case StepStatus::pending:
      case StepStatus::running:
        blocking = RowStatus::pending;
        return step + " not run yet";
      default:
        break;
    }
    if (s.kind == StepKind::import && s.exit_code == 1) {
      blocking = RowStatus::refused;
      return "import failed: " + s.reason;
    }
  }
  if (run && !run->stop_reason.empty()) return "plan done; optimize: " + run->stop_reason;
  return "plan done";
}

std::string dims_label(const Problem& problem) {
  std::string out;
  for (const auto& d : problem.dims)
    out += (out.empty() ? "" : " ") + d.name + "=" + std::to_string(d.value);
  return out;
}

// Whether a shape label ("M=1 N=4096") names the problem's own dims.
bool at_own_dims(const std::string& label, const std::string& own) {
  if (label.empty()) return true;
  std::string padded = " " + own + " ";
  std::size_t start = 0;
  while (start < label.size()) {
    std::size_t end = label.find(' ', start);
    std::string item = label.substr(start, end == std::string::npos ? end : end - start);
    if (padded.find(" " + item + " ") == std::string::npos) return false;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return true;
}

void finish(LeaderboardRow& row, std::optional<RowStatus> blocking, bool has_candidates,
            double floor_s) {
  if (row.time_s) {
    if (row.eager_s) {
      row.speedup_eager = *row.eager_s / *row.time_s;
      row.status = *row.speedup_eager > 1 ? RowStatus::faster : RowStatus::slower;
    } else {
      row.status = RowStatus::passed;
    }
    if (row.compile_s) row.speedup_compile = *row.compile_s / *row.time_s;
    if (floor_s > 0) row.pct_sol = 100 * floor_s / *row.time_s;
  } else if (blocking) {
    row.status = *blocking;
  } else {
    row.status = has_candidates ? RowStatus::failed : RowStatus::baseline;
  }
  if (row.bound.empty()) row.bound = "-";
  if (row.time_s && !row.eager_s && row.notes.empty())
    row.notes.push_back("no torch eager time at this shape (a reference that is not Python)");
  if (row.time_s && floor_s <= 0)
    row.notes.push_back("no %SOL: the problem has no cost formula or no roofs were found");
}

}  // namespace

Leaderboard make_leaderboard(const CampaignState& state, const fs::path& out) {
  Leaderboard b;
  b.plan = plan_text(state.plan);
  b.budget_s = state.budget_s;
  for (const auto& p : state.problems) {
    fs::path room = problem_room(out, p.name);
    std::optional<RowStatus> blocking;  // a step that did not run to its end
    auto problem = load_problem(p.dir);
    auto run = load_run_state(room / "run");  // the optimize step's, where there was one
    std::string stopped = stopped_by(p, run ? &*run : nullptr, blocking);
    bool has_candidates = problem && !problem->kernels.empty();
    std::string own = problem ? dims_label(*problem) : "";

    std::vector<LeaderboardRow> rows;
    std::vector<double> floors;
    auto bench = read_record(room / "bench.json");
    auto check = read_record(room / "check.json");
    for (const auto& [label, r] :
         bench ? per_shape(*bench) : std::vector<std::pair<std::string, json>>{}) {
      LeaderboardRow row;
      row.problem = p.name;
      row.shape = label.empty() ? own : label;
      double floor_s = 0;
      read_bench(r, row, floor_s);
      rows.push_back(std::move(row));
      floors.push_back(floor_s);
    }
    if (rows.empty()) {
      LeaderboardRow row;
      row.problem = p.name;
      row.shape = own;
      rows.push_back(std::move(row));
      floors.push_back(0);
    }
    if (check)
      for (const auto& [label, r] : per_shape(*check))
        for (auto& row : rows)
          if (label.empty() || row.shape == label) read_check(r, row);
    // Tune's and optimize's champions were measured at the problem's own dims.
    LeaderboardRow* own_row = nullptr;
    for (auto& row : rows)
      if (at_own_dims(row.shape == own ? "" : row.shape, own)) own_row = &row;
    if (!own_row) {
      LeaderboardRow row;
      row.problem = p.name;
      row.shape = own;
      row.notes.push_back("not benched at this shape: tune's and optimize's own measurements");
      rows.push_back(std::move(row));
      floors.push_back(0);
      own_row = &rows.back();
    }
    for (const auto& s : p.steps) {
      if (s.kind != StepKind::tune) continue;
      auto t = read_record(room / s.record());
      if (t && t->contains("champion") && (*t)["champion"].is_object() &&
          (*t)["champion"]["summary"].is_object())
        offer(*own_row, point_text(s.kernel, (*t)["champion"].value("point", json::object())),
              "tune", (*t)["champion"]["summary"].value("median", 0.0));
    }
    if (run)
      if (const VersionRecord* v = run->champion(); v && v->median_s > 0) {
        json params = json::object();
        for (const auto& [k, x] : v->point) params[k] = x;
        offer(*own_row, point_text(v->kernel, params), "optimize v" + std::to_string(v->index),
              v->median_s);
      }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      rows[i].stopped = stopped;
      finish(rows[i], blocking, has_candidates, floors[i]);
      if (!problem && rows[i].notes.empty() && step_of(p, StepKind::check)) {
        // A KernelBench file not imported yet, or a ModelNew answer not checked yet (its
        // problem is inferred by the check), has no problem folder: that is the reason, not
        // the loader's "no such problem directory".
        const StepRecord* first = step_of(p, StepKind::import);
        if (!first) first = step_of(p, StepKind::check);
        bool waiting = first->status == StepStatus::pending || first->status == StepStatus::running;
        rows[i].notes.push_back(waiting ? fmt::format("its {} step has not run yet", first->kind)
                                        : problem.error().message);
      }
      b.rows.push_back(rows[i]);
    }
  }

  // fast_p over every row (KernelBench's: correct and faster than p times), the geometric
  // means over the rows with both times, the failures by cause.
  std::size_t n = b.rows.size();
  for (double p : {0.0, 1.0, 1.5, 2.0}) {
    FastP f{.p = p};
    for (const auto& r : b.rows) {
      if (!r.correct()) continue;
      f.over_eager += (p == 0 || (r.speedup_eager && *r.speedup_eager > p)) ? 1 : 0;
      f.over_compile += (p == 0 || (r.speedup_compile && *r.speedup_compile > p)) ? 1 : 0;
    }
    if (n > 0) f.over_eager /= static_cast<double>(n), f.over_compile /= static_cast<double>(n);
    b.fast_p.push_back(f);
  }
  double le = 0, lc = 0;
  for (const auto& r : b.rows) {
    if (r.speedup_eager) le += std::log(*r.speedup_eager), ++b.n_eager;
    if (r.speedup_compile) lc += std::log(*r.speedup_compile), ++b.n_compile;
    std::string where = r.problem + (r.shape.empty() ? "" : " [" + r.shape + "]");
    for (const auto& c : r.causes) {
      std::size_t colon = c.rfind(": ");
      std::string cause = colon == std::string::npos ? c : c.substr(colon + 2);
      b.failures[cause].push_back(where + " (" + c.substr(0, colon) + ")");
    }
  }
  // Steps that did not run to their end, whatever the rows say.
  for (const auto& p : state.problems)
    for (const auto& s : p.steps)
      if (s.status == StepStatus::refused || s.status == StepStatus::environment ||
          s.status == StepStatus::budget)
        b.failures[std::string(name_of(s.status))].push_back(
            p.name + " (" + std::string(name_of(s.kind)) +
            (s.kernel.empty() ? "" : " " + s.kernel) + "): " + s.reason);
  if (b.n_eager) b.geomean_eager = std::exp(le / static_cast<double>(b.n_eager));
  if (b.n_compile) b.geomean_compile = std::exp(lc / static_cast<double>(b.n_compile));
  return b;
}

}  // namespace kopt::campaign
