// `kopt export PROBLEM --kernel K [--set NAME=V]... --format modelnew|solve --out PATH`: a
// kernel at a point (a tune champion with --from-tune) in the formats others read
// (problem/export.hpp, docs/bare-files.md): a KernelBench ModelNew file, or solve.cu + ref.py.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "commands.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/export.hpp"
#include "kopt/problem/param_space.hpp"
#include "kopt/tune/champion_file.hpp"

namespace kopt::cli {
namespace fs = std::filesystem;

namespace {

struct ExportCliOptions {
  ProblemSelection sel;
  std::string format;
  std::string out;
  std::string from_tune;
  bool force = false;
};

// A champion file of `kopt tune`: its params become --set, its dims --dim, its kernel --kernel,
// each where the command line says nothing else.
Expected<std::map<std::string, std::int64_t>> read_champion(ExportCliOptions& o) {
  auto text = read_text_file(o.from_tune);
  if (!text)
    return Unexpected(bad_input(text.error().message + " (kopt tune writes its champion to " +
                                    tune::default_champion_path("PROBLEM", "KERNEL").string() +
                                    ", or to its --out)",
                                o.from_tune, 0, "--from-tune"));
  try {
    auto j = nlohmann::json::parse(*text);
    if (j.value("command", "") != "tune")
      return Unexpected(
          bad_input("is no champion file of kopt tune", o.from_tune, 0, "--from-tune"));
    if (j.at("champion").is_null())
      return Unexpected(bad_input("has no champion: " + j.value("why", std::string("?")),
                                  o.from_tune, 0, "--from-tune"));
    std::string kernel = j.at("kernel");
    if (o.sel.kernels.empty()) o.sel.kernels.push_back(kernel);
    if (o.sel.kernels != std::vector<std::string>{kernel})
      return Unexpected(bad_input(
          "is the champion of kernel '" + kernel + "', not of --kernel " + o.sel.kernels.front(),
          o.from_tune, 0, "--from-tune"));
    auto given = parse_assignments(o.sel.dims, "--dim");
    if (!given) return Unexpected(given.error());
    // Named: items() of a temporary would dangle.
    const nlohmann::json dims = j.value("dims", nlohmann::json::object());
    for (const auto& [name, v] : dims.items())
      if (!given->count(name)) o.sel.dims.push_back(name + "=" + std::to_string(v.get<long>()));
    return j.at("champion").at("params").get<std::map<std::string, std::int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    return Unexpected(
        bad_input(std::string("not a champion file: ") + e.what(), o.from_tune, 0, "--from-tune"));
  }
}

// The one kernel to export: --kernel, or the problem's only one.
Expected<const KernelSpec*> chosen_kernel(const Problem& p, const ProblemSelection& sel) {
  std::string names;
  for (const auto& k : p.kernels) names += (names.empty() ? "" : ", ") + k.name;
  if (sel.kernels.size() > 1)
    return Unexpected(
        bad_input("exports one kernel at a time: give --kernel once", "", 0, "--kernel"));
  if (sel.kernels.empty()) {
    if (p.kernels.size() == 1) return &p.kernels.front();
    return Unexpected(bad_input("the problem has several kernels (" + names + "): choose one", "",
                                0, "--kernel"));
  }
  const std::string& want = sel.kernels.front();
  if (std::find(p.skipped_kernels.begin(), p.skipped_kernels.end(), want) !=
      p.skipped_kernels.end())
    return Unexpected(bad_input("kernel '" + want +
                                    "' has only an OpenCL source, which neither a ModelNew nor "
                                    "a solve() .cu can run: export a CUDA or Triton kernel",
                                p.spec_path.string(), 0, "kernels.source"));
  const KernelSpec* k = p.find_kernel(want);
  if (!k)
    return Unexpected(bad_input("no kernel '" + want + "' in the problem (kernels: " + names + ")",
                                "", 0, "--kernel"));
  return k;
}

// Where each file goes: --out is the file of a modelnew (or a folder for model_new.py), the
// folder of a solve export.
std::vector<fs::path> targets(const ExportCliOptions& o, const Export& e) {
  fs::path out(o.out);
  bool folder =
      o.format == "solve" || fs::is_directory(out) || (!o.out.empty() && (o.out.back() == '/'));
  std::vector<fs::path> paths;
  for (const auto& f : e.files) paths.push_back(folder ? out / f.name : out);
  return paths;
}

int run_export(const GlobalOptions& g, ExportCliOptions& o) {
  auto fail = [&](const Error& e) {
    return report_error(g, "export", exit_code(e.kind), e.to_string());
  };
  // The CUDA family's selection: a kernel's CUDA or Triton source, whatever this machine runs.
  set_backend_choice("cuda");
  std::map<std::string, std::int64_t> champion;
  if (!o.from_tune.empty()) {
    auto c = read_champion(o);
    if (!c) return fail(c.error());
    champion = *c;
  }
  auto sel = load_selection(o.sel);
  if (!sel) return fail(sel.error());
  const Problem& p = sel->problem;
  auto kernel = chosen_kernel(p, o.sel);
  if (!kernel) return fail(kernel.error());
  const KernelSpec& k = **kernel;
  std::map<std::string, std::int64_t> sets = champion;
  for (const auto& [n, v] : sel->sets) sets[n] = v;
  if (auto used = check_assignments_used(p, {&k}, sets, "--set"); !used) return fail(used.error());
  auto point = resolve_point(p, k, assignments_for(k, sets));
  if (!point) return fail(point.error());
  auto sources = read_export_sources(p, k);
  if (!sources) return fail(sources.error());
  ExportRequest req;
  req.format = o.format == "solve" ? ExportFormat::solve : ExportFormat::model_new;
  req.arch = o.sel.arch.value_or("");
  auto out = export_kernel(p, k, *point, req, *sources);
  if (!out) return fail(out.error());

  std::vector<fs::path> paths = targets(o, *out);
  for (const auto& path : paths)
    if (fs::exists(path) && !o.force)
      return fail(bad_input("exists: --force replaces it", path.string(), 0, "--out"));
  for (std::size_t i = 0; i < paths.size(); ++i) {
    std::error_code ec;
    if (paths[i].has_parent_path()) fs::create_directories(paths[i].parent_path(), ec);
    if (auto w = write_text_atomic(paths[i], out->files[i].text); !w) return fail(w.error());
  }
  fs::path first = fs::absolute(paths.front());
  std::string next =
      req.format == ExportFormat::solve
          ? "cd " + first.parent_path().string() + " && kopt check solve.cu --ref ref.py " +
                out->dims_flag
          : "python3 bench/kernelbench_eval.py " +
                (sources->model_py ? (fs::absolute(p.dir) / "model.py").string() : first.string()) +
                " " + first.string();
  if (g.json) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& path : paths) files.push_back(fs::absolute(path).string());
    std::map<std::string, std::int64_t> dims;
    for (const auto& d : p.dims) dims[d.name] = d.value;
    std::cout << nlohmann::json{{"schema_version", 1}, {"command", "export"},
                                {"problem", p.name},   {"kernel", k.name},
                                {"format", o.format},  {"language", out->language},
                                {"params", *point},    {"dims", dims},
                                {"files", files},      {"fixed_dims", out->fixed_dims},
                                {"notes", out->notes}, {"next", next}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("kopt export {} · kernel {} ({}){} as {}\n", p.name, k.name,
                           out->language, point->empty() ? "" : " at " + point_to_string(*point),
                           o.format);
  for (const auto& path : paths) std::cout << "  wrote " << path.string() << "\n";
  for (const auto& d : out->fixed_dims)
    std::cout << "  fixed: " << d << " (no input's extent gives it)\n";
  for (const auto& n : out->notes) std::cout << "  note: " << n << "\n";
  std::cout << "next: " << next << "\n";
  return 0;
}

}  // namespace

std::vector<Command> export_commands(const GlobalRef& g) {
  auto o = std::make_shared<ExportCliOptions>();
  Command c{.path = {"export"},
            .help =
                "a kernel at a point (a tune champion with --from-tune) as a KernelBench "
                "ModelNew file (CUDA through load_inline, or Triton) or as solve.cu + ref.py",
            .run = [g, o] { return run_export(*g, *o); },
            .storage = o};
  add_selection(c, o->sel);
  // No device: export writes text. --arch stays: a -gencode target for the exported build.
  c.options.erase(std::remove_if(c.options.begin(), c.options.end(),
                                 [](const Option& x) { return x.long_name() == "--device"; }),
                  c.options.end());
  for (auto& x : c.options) {
    if (x.long_name() == "--kernel")
      x.help = "the kernel to export (default: the problem's only one)";
    if (x.long_name() == "--arch")
      x.help =
          "build the export for this target, e.g. sm_90 (default: the kernel's own arch "
          "where it declares one, else the builder's: load_inline's device, nvcc's "
          "default)";
  }
  c.options.push_back({.names = "--format",
                       .help = "modelnew: one Python file with Model and ModelNew; solve: "
                               "solve.cu, ref.py and README.md in a folder",
                       .target = &o->format,
                       .choices = {"modelnew", "solve"},
                       .required = true});
  c.options.push_back({.names = "--out",
                       .help = "modelnew: the .py file (a folder: model_new.py in it); solve: "
                               "the folder",
                       .target = &o->out,
                       .required = true});
  c.options.push_back({.names = "--from-tune",
                       .help = "the point of a champion file of kopt tune (kopt-tune/PROBLEM/"
                               "KERNEL.json): its params, dims and kernel, where --set, --dim "
                               "and --kernel say nothing else",
                       .target = &o->from_tune});
  c.options.push_back(
      {.names = "--force", .help = "replace files that exist", .target = &o->force});
  return {c};
}

}  // namespace kopt::cli
