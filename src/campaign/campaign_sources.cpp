// Which problems a campaign's sources hold (campaign.hpp): problem directories (a kopt.toml, at
// any depth of a folder) and KernelBench files (a *.py with `class Model` and `get_inputs`),
// each with a name unique in the campaign.
#include <algorithm>
#include <map>

#include "campaign_files.hpp"
#include "kopt/campaign/kernelbench_batch.hpp"
#include "kopt/core/fs.hpp"

namespace kopt::campaign {
namespace fs = std::filesystem;

namespace {

bool is_kernelbench_file(const fs::path& f) {
  if (f.extension() != ".py") return false;
  auto text = read_text_file(f);
  return text && text->find("class Model(") != std::string::npos &&
         text->find("class ModelNew") == std::string::npos &&
         text->find("def get_inputs") != std::string::npos;
}

// kopt's outputs and what is not a problem: hidden folders, kopt-*, __pycache__, build*.
bool skipped_folder(const std::string& name) {
  return name.rfind('.', 0) == 0 || name.rfind("kopt-", 0) == 0 || name == "__pycache__" ||
         name.rfind("build", 0) == 0;
}

CampaignProblem problem_dir(const fs::path& dir) {
  CampaignProblem p;
  p.name = dir.filename().string();
  p.source = p.dir = dir;
  return p;
}

CampaignProblem kernelbench_problem(const fs::path& file, const fs::path& out,
                                    const fs::path& candidates) {
  CampaignProblem p;
  p.name = file.stem().string();
  p.source = file;
  std::error_code ec;
  if (!candidates.empty() && fs::exists(candidates / p.name / "kopt.toml", ec)) {
    p.dir = fs::absolute(candidates / p.name);  // the problem with its candidate kernels
    return p;
  }
  fs::path answer = candidates / (p.name + ".py");
  if (!candidates.empty() && fs::is_regular_file(answer, ec))
    if (auto text = read_text_file(answer);
        text && text->find("class ModelNew") != std::string::npos) {
      p.modelnew = fs::absolute(answer);
      // The copy goes to candidate/NAME.py, and kopt infers its problem in candidate/kopt-NAME.
      p.dir = problem_room(out, p.name) / "candidate" / ("kopt-" + p.name);
      return p;
    }
  p.kernelbench = true;
  p.dir = problem_room(out, p.name) / "problem";
  return p;
}

// A folder's problems: its problem directories (not descended into) and KernelBench files, the
// files in KernelBench's numeric order, the folders by name.
void walk(const fs::path& folder, const fs::path& out, const fs::path& candidates,
          std::vector<CampaignProblem>& found) {
  for (const auto& f : kernelbench_files(folder))
    if (is_kernelbench_file(f)) found.push_back(kernelbench_problem(f, out, candidates));
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.is_directory(ec) && !skipped_folder(e.path().filename().string()) &&
        fs::absolute(e.path()) != fs::absolute(out))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    if (fs::exists(d / "kopt.toml", ec))
      found.push_back(problem_dir(fs::absolute(d)));
    else
      walk(d, out, candidates, found);
  }
}

}  // namespace

Expected<std::vector<CampaignProblem>> discover_problems(const std::vector<fs::path>& sources,
                                                         const fs::path& out,
                                                         const fs::path& candidates) {
  std::vector<CampaignProblem> found;
  std::error_code ec;
  if (!candidates.empty() && !fs::is_directory(candidates, ec))
    return Unexpected(bad_input("--candidates: not a folder", candidates.string()));
  for (const auto& raw : sources) {
    fs::path s = fs::absolute(raw);
    std::size_t before = found.size();
    if (fs::is_directory(s, ec) && fs::exists(s / "kopt.toml", ec))
      found.push_back(problem_dir(s));
    else if (fs::is_directory(s, ec))
      walk(s, out, candidates, found);
    else if (fs::is_regular_file(s, ec) && is_kernelbench_file(s))
      found.push_back(kernelbench_problem(s, out, candidates));
    else if (fs::exists(s, ec))
      return Unexpected(bad_input(
          "not a problem: neither a folder, a problem directory (kopt.toml) nor a KernelBench "
          "file (a .py with class Model and get_inputs)",
          raw.string()));
    else
      return Unexpected(bad_input("no such file or folder", raw.string()));
    if (found.size() == before)
      return Unexpected(bad_input(
          "holds no problem (no kopt.toml below it, no KernelBench file in it)", raw.string()));
  }
  std::map<std::string, fs::path> seen;
  std::vector<CampaignProblem> unique;
  for (auto& p : found) {
    auto [it, fresh] = seen.emplace(p.name, p.source);
    if (fresh) {
      unique.push_back(std::move(p));
    } else if (it->second != p.source) {
      return Unexpected(bad_input("two problems named '" + p.name + "': " + it->second.string() +
                                      " and " + p.source.string() +
                                      " (a campaign names each problem by its folder or file)",
                                  p.source.string()));
    }
  }
  return unique;
}

}  // namespace kopt::campaign
