// The campaign's records: its state file, its lock, sources added to it while it runs, and the
// fingerprints that tell a problem changed (campaign.hpp, campaign_files.hpp).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>

#include "campaign_files.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/core/text.hpp"

namespace kopt::campaign {
namespace fs = std::filesystem;
using nlohmann::json;

std::string StepRecord::stem() const {
  std::string name(name_of(kind));
  return kernel.empty() ? name : name + "-" + kernel;
}

Expected<CampaignPlan> parse_plan(const std::string& text) {
  CampaignPlan p{false, false, false, false};
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    std::string item = trim(text.substr(start, end == std::string::npos ? end : end - start));
    start = end == std::string::npos ? text.size() + 1 : end + 1;
    if (item.empty()) continue;
    auto kind = parse_enum<StepKind>(item);
    if (!kind || *kind == StepKind::import)
      return Unexpected(
          bad_input("--plan: unknown step '" + item + "' (steps: check, bench, tune, optimize)"));
    (*kind == StepKind::check   ? p.check
     : *kind == StepKind::bench ? p.bench
     : *kind == StepKind::tune  ? p.tune
                                : p.optimize) = true;
  }
  if (!p.check && !p.bench && !p.tune && !p.optimize)
    return Unexpected(bad_input("--plan names no step (steps: check, bench, tune, optimize)"));
  return p;
}

std::string plan_text(const CampaignPlan& p) {
  std::string out;
  for (auto [on, name] : {std::pair{p.check, "check"}, std::pair{p.bench, "bench"},
                          std::pair{p.tune, "tune"}, std::pair{p.optimize, "optimize"}})
    if (on) out += (out.empty() ? "" : ",") + std::string(name);
  return out;
}

int CampaignState::exit_code() const {
  for (const auto& p : problems)
    for (const auto& s : p.steps)
      if (s.status == StepStatus::refused || s.status == StepStatus::environment ||
          s.status == StepStatus::pending || s.status == StepStatus::running)
        return 1;
  return 0;
}

json to_json(const StepRecord& s) {
  return {{"step", s.kind},           {"kernel", s.kernel}, {"status", s.status},
          {"exit_code", s.exit_code}, {"wall_s", s.wall_s}, {"reason", s.reason},
          {"attempts", s.attempts},   {"device", s.device}, {"record", s.record()}};
}

json to_json(const CampaignProblem& p) {
  json steps = json::array();
  for (const auto& s : p.steps) steps.push_back(to_json(s));
  return {{"name", p.name},
          {"source", p.source.string()},
          {"dir", p.dir.string()},
          {"kernelbench", p.kernelbench},
          {"modelnew", p.modelnew.string()},
          {"fingerprint", p.fingerprint},
          {"spent_s", p.spent_s},
          {"steps", steps}};
}

json to_json(const CampaignState& s) {
  json problems = json::array();
  for (const auto& p : s.problems) problems.push_back(to_json(p));
  return {{"schema_version", 1},       {"command", "campaign"},
          {"sources", s.sources},      {"candidates", s.candidates},
          {"plan", plan_text(s.plan)}, {"budget_s", s.budget_s},
          {"wall_s", s.wall_s},        {"added_to_running", s.added_to_running},
          {"problems", problems},      {"exit_code", s.exit_code()}};
}

namespace {

StepRecord step_from_json(const json& j) {
  StepRecord s;
  s.kind = j.at("step");
  s.kernel = j.value("kernel", std::string{});
  s.status = j.value("status", StepStatus::pending);
  s.exit_code = j.value("exit_code", -1);
  s.wall_s = j.value("wall_s", 0.0);
  s.reason = j.value("reason", std::string{});
  s.attempts = j.value("attempts", 0);
  s.device = j.value("device", std::string{});
  return s;
}

}  // namespace

Expected<CampaignState> load_campaign_state(const fs::path& out) {
  auto text = read_text_file(out / "campaign.json");
  if (!text) return Unexpected(text.error());
  try {
    json j = json::parse(*text);
    CampaignState s;
    s.sources = j.value("sources", std::vector<std::string>{});
    s.candidates = j.value("candidates", std::string{});
    auto plan = parse_plan(j.value("plan", std::string("check,bench,tune")));
    if (plan) s.plan = *plan;
    s.budget_s = j.value("budget_s", 0.0);
    s.wall_s = j.value("wall_s", 0.0);
    for (const auto& pj : j.at("problems")) {
      CampaignProblem p;
      p.name = pj.at("name");
      p.source = pj.value("source", std::string{});
      p.dir = pj.value("dir", std::string{});
      p.kernelbench = pj.value("kernelbench", false);
      p.modelnew = pj.value("modelnew", std::string{});
      p.fingerprint = pj.value("fingerprint", std::string{});
      p.spent_s = pj.value("spent_s", 0.0);
      for (const auto& sj : pj.value("steps", json::array())) p.steps.push_back(step_from_json(sj));
      s.problems.push_back(std::move(p));
    }
    return s;
  } catch (const std::exception& e) {
    return Unexpected(bad_input(std::string("unreadable campaign state: ") + e.what(),
                                (out / "campaign.json").string()));
  }
}

void StateFile::save(const CampaignState& s) {
  std::lock_guard lock(m_mutex);
  (void)write_text_atomic(m_out / "campaign.json", to_json(s).dump(1) + "\n");
}

DirectoryLock::DirectoryLock(const fs::path& out) {
  m_fd = ::open((out / "campaign.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  m_held = m_fd >= 0 && ::flock(m_fd, LOCK_EX | LOCK_NB) == 0;
}

DirectoryLock::~DirectoryLock() {
  if (m_fd >= 0) ::close(m_fd);  // closing frees the lock
}

std::vector<std::string> added_sources(const fs::path& out) {
  auto text = read_text_file(out / "sources.json");
  if (!text) return {};
  try {
    return json::parse(*text).get<std::vector<std::string>>();
  } catch (const std::exception&) {
    return {};
  }
}

Expected<void> add_sources(const fs::path& out, const std::vector<std::string>& more) {
  // Two invocations adding at once: flock on the file's own lock keeps both additions.
  int fd = ::open((out / "sources.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::flock(fd, LOCK_EX);
  auto all = added_sources(out);
  for (const auto& s : more)
    if (std::find(all.begin(), all.end(), s) == all.end()) all.push_back(s);
  auto w = write_text_atomic(out / "sources.json", json(all).dump(1) + "\n");
  if (fd >= 0) ::close(fd);
  return w;
}

std::string fingerprint_of(const CampaignProblem& p) {
  if (p.modelnew.empty()) return fingerprint_of(p.source);
  Sha256 h;  // the KernelBench file and its answer
  h.field(fingerprint_of(p.source));
  h.field(fingerprint_of(p.modelnew));
  return h.hex();
}

std::string fingerprint_of(const fs::path& source) {
  Sha256 h;
  std::error_code ec;
  if (!fs::is_directory(source, ec)) {
    auto text = read_text_file(source);
    return text ? sha256_hex(*text) : std::string{};
  }
  std::vector<fs::path> files;
  auto it =
      fs::recursive_directory_iterator(source, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    bool own = name.rfind('.', 0) == 0 || name.rfind("kopt-", 0) == 0 || name == "__pycache__";
    if (it->is_directory(ec)) {
      if (own) it.disable_recursion_pending();
      continue;
    }
    if (!own && it->is_regular_file(ec) && it->file_size(ec) < (16u << 20))
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    h.field(fs::relative(f, source, ec).string());
    auto text = read_text_file(f);
    h.field(text ? *text : std::string{});
  }
  return h.hex();
}

fs::path problem_room(const fs::path& out, const std::string& name) {
  return out / "problems" / name;
}

}  // namespace kopt::campaign
