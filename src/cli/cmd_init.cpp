// `kopt init FILE... [--ref REF.py] [--dims M=...,N=...]`: a problem from the files users have
// (problem/bare_files.hpp); and the same for a kernel file given to check, bench, profile,
// tune or optimize in place of a problem directory.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/backend/python/init_probe.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt::cli {
namespace fs = std::filesystem;

namespace {

struct InitCliOptions {
  std::vector<std::string> files;
  std::string ref;
  std::vector<std::string> dims, dim_lists;
  std::string out;
  bool force = false;
};

bool is_bare_kernel_file(const fs::path& p) {
  if (!fs::is_regular_file(p)) return false;
  std::string ext = p.extension().string();
  return ext == ".cu" || ext == ".cl" || ext == ".py";
}

// --dim items followed by the NAME=VALUE items of the --dims lists.
std::vector<std::string> dim_items(std::vector<std::string> items,
                                   const std::vector<std::string>& lists) {
  for (const auto& list : lists) {
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      if (comma > start) items.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
  }
  return items;
}

// --dims lists and --dim items, in the order given.
Expected<std::vector<std::pair<std::string, std::int64_t>>> ordered_dims(
    const std::vector<std::string>& dims, const std::vector<std::string>& lists) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& item : dim_items(dims, lists)) {
    auto one = parse_assignments({item}, "--dims");
    if (!one) return Unexpected(one.error());
    auto [name, value] = *one->begin();
    auto same =
        std::find_if(out.begin(), out.end(), [&](const auto& d) { return d.first == name; });
    if (same != out.end())
      same->second = value;
    else
      out.emplace_back(name, value);
  }
  return out;
}

void print_guesses(std::ostream& os, const InitOutcome& o, const std::string& prefix) {
  if (!o.written) return;
  os << prefix << "inferred " << o.spec.string() << " (problem " << o.name << ")\n";
  for (const auto& g : o.guesses) os << prefix << "  guessed: " << g << "\n";
}

int run_init(const GlobalOptions& g, const InitCliOptions& o) {
  auto fail = [&](const Error& e) {
    return report_error(g, "init", exit_code(e.kind), e.to_string());
  };
  auto dims = ordered_dims(o.dims, o.dim_lists);
  if (!dims) return fail(dims.error());
  BareRequest req;
  for (const auto& f : o.files) req.kernels.emplace_back(f);
  if (!o.ref.empty()) req.ref = fs::path(o.ref);
  req.dims = *dims;
  req.out_dir = !o.out.empty()                              ? fs::path(o.out)
                : req.kernels.empty()                       ? fs::path(".")
                : req.kernels.front().parent_path().empty() ? fs::path(".")
                                                            : req.kernels.front().parent_path();
  std::error_code ec;
  fs::create_directories(req.out_dir, ec);
  if (ec)
    return fail(bad_input("cannot create it: " + ec.message(), req.out_dir.string(), 0, "--out"));
  auto out = init_bare_problem(req, cache_dir(), o.force);
  if (!out) return fail(out.error());
  auto problem = load_problem(out->spec);
  if (!problem) return fail(problem.error());
  if (g.json) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : problem->tensors) {
      std::vector<std::string> shape;
      for (const auto& e : t.shape) shape.push_back(e.text());
      tensors.push_back({{"name", t.name},
                         {"dtype", dtype_name(t.dtype)},
                         {"shape", shape},
                         {"role", role_name(t.role)}});
    }
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& k : problem->kernels) kernels.push_back(k.name);
    std::cout << nlohmann::json{{"schema_version", 1},
                                {"command", "init"},
                                {"spec", fs::absolute(out->spec).string()},
                                {"problem", out->name},
                                {"written", out->written},
                                {"tensors", tensors},
                                {"kernels", kernels},
                                {"guesses", out->guesses}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << (out->written ? "wrote " : "up to date: ") << out->spec.string() << " · problem "
            << problem->name << "\n";
  for (const auto& t : problem->tensors) {
    std::string shape;
    for (const auto& e : t.shape) shape += (shape.empty() ? "" : ", ") + e.text();
    std::cout << fmt::format("  {:<8} {:<6} {:<5} [{}]\n", t.name, role_name(t.role),
                             dtype_name(t.dtype), shape);
  }
  for (const auto& k : problem->kernels) std::cout << "  kernel " << k.name << "\n";
  for (const auto& gu : out->guesses) std::cout << "  guessed: " << gu << "\n";
  std::cout << "next: kopt check " << out->spec.parent_path().string() << ", then kopt bench, "
            << "kopt optimize (the guesses are comments in kopt.toml)\n";
  return 0;
}

}  // namespace

Expected<void> resolve_bare_files(ProblemSelection& sel) {
  sel.dims = dim_items(sel.dims, sel.dim_lists);
  sel.dim_lists.clear();
  fs::path file = sel.problem;
  if (!is_bare_kernel_file(file)) {
    if (!sel.ref.empty())
      return Unexpected(bad_input(
          "--ref goes with a kernel file given as the problem; a problem directory's kopt.toml "
          "names its reference",
          sel.problem, 0, "--ref"));
    return {};
  }
  fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  fs::path spec = dir / "kopt.toml";
  if (fs::exists(spec)) {
    auto text = read_text_file(spec);
    if (text && inferred_hash_of(*text).empty()) {
      // The user's own problem: the kernels of it that have this file as a source.
      auto p = load_problem(spec);
      if (!p) return Unexpected(p.error());
      std::vector<std::string> names;
      std::error_code ec;
      for (const auto& k : p->kernels)
        for (const auto& s : k.sources)
          if (fs::equivalent(dir / s, file, ec)) names.push_back(k.name);
      if (names.empty())
        return Unexpected(bad_input(
            "is the problem of this folder, and none of its kernels has " +
                file.filename().string() +
                " as its source: add one, or run kopt init on the file with --out another folder",
            spec.string()));
      sel.file_kernels = names;
      std::cerr << "kopt: " << file.string() << " is a kernel of " << spec.string() << "\n";
      sel.problem = dir.string();
      return {};
    }
  }
  auto dims = ordered_dims(sel.dims, {});
  if (!dims) return Unexpected(dims.error());
  BareRequest req;
  req.kernels = {file};
  if (!sel.ref.empty()) req.ref = fs::path(sel.ref);
  req.dims = *dims;
  req.out_dir = dir;
  auto out = init_bare_problem(req, cache_dir(), false);
  if (!out) return Unexpected(out.error());
  print_guesses(std::cerr, *out, "kopt: ");
  sel.problem = out->spec.parent_path().string();
  sel.ref.clear();
  return {};
}

std::vector<Command> init_commands(const GlobalRef& g) {
  auto o = std::make_shared<InitCliOptions>();
  Command c{.path = {"init"},
            .help =
                "a problem from the files you have: a kernel (.cu with solve() or __global__ "
                "kernels, .cl, Triton .py with run_kernel), a ref.py with reference(**kwargs) "
                "and dims; writes kopt.toml with every guess commented",
            .run = [g, o] { return run_init(*g, *o); },
            .storage = o};
  c.options = {
      {.names = "files", .help = "the kernel files", .target = &o->files, .required = true},
      {.names = "--ref",
       .help = "the reference: a ref.py with reference(**kwargs) (default: ref.py beside the "
               "first file)",
       .target = &o->ref},
      {.names = "--dims", .help = "dims as NAME=VALUE,NAME=VALUE", .target = &o->dim_lists},
      {.names = "--dim", .help = "a dim NAME=VALUE (repeatable)", .target = &o->dims},
      {.names = "--out",
       .help = "the folder for kopt.toml (default: the first file's)",
       .target = &o->out},
      {.names = "--force",
       .help = "replace a kopt.toml there, even one kopt did not infer",
       .target = &o->force},
  };
  return {c};
}

}  // namespace kopt::cli
