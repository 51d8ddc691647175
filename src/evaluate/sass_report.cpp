#include "kopt/evaluate/sass_report.hpp"

#include "kopt/backend/build_cache.hpp"
#include "kopt/backend/cubin_resources.hpp"
#include "kopt/evaluate/variant_jobs.hpp"
#include "kopt/problem/arch_target.hpp"

namespace kopt::evaluate {
using nlohmann::json;

int SassReport::exit_code() const {
  int code = 0;
  for (const auto& k : kernels) {
    if (!k.build.ok) code = 1;
    if (!methods_requested) continue;
    for (const auto& v : k.verdicts) {
      if (v.verdict == SassVerdictKind::missing) code = 1;
      if (v.verdict == SassVerdictKind::unverifiable && code == 0) code = 3;
    }
  }
  return code;
}

namespace {

// 90 for sm_90 and for the arch-specific sm_90a; 0 for what is no sm_ arch.
int sm_of(const std::string& arch) {
  return arch_number(arch).value_or(0);
}

}  // namespace

Expected<SassReport> run_sass(const Problem& p, const SassRequest& req, SassContext ctx) {
  SassReport report;
  report.problem = p.name;
  report.arch = req.arch;
  report.methods_requested = !req.methods.empty();
  std::vector<const Method*> methods;
  for (const auto& id : req.methods) {
    const Method* m = ctx.catalog.find(id);
    if (!m) {
      std::string known;
      for (const auto& x : ctx.catalog.methods) known += (known.empty() ? "" : ", ") + x.id;
      return Unexpected(bad_input("--method " + id + ": not in the catalog (known: " + known + ")",
                                  ctx.catalog.source));
    }
    methods.push_back(m);
  }
  if (methods.empty())
    for (const auto& m : ctx.catalog.methods) methods.push_back(&m);

  std::vector<std::pair<const KernelSpec*, std::map<std::string, std::int64_t>>> targets;
  auto selected = select_kernels(p, req.kernels);
  if (!selected) return Unexpected(selected.error());
  const std::vector<const KernelSpec*>& chosen = *selected;
  if (req.vs && chosen.size() != 1)
    return Unexpected(bad_input("--vs compares one kernel: name it with --kernel"));
  if (auto used = check_assignments_used(p, chosen, req.sets, "--set"); !used)
    return Unexpected(used.error());
  if (req.vs)
    if (auto used = check_assignments_used(p, chosen, *req.vs, "--vs"); !used)
      return Unexpected(used.error());
  for (const KernelSpec* k : chosen) {
    auto own = assignments_for(*k, req.sets);
    targets.emplace_back(k, own);
    if (req.vs) {
      auto b = own;
      for (const auto& [param, value] : *req.vs) b[param] = value;
      targets.emplace_back(k, b);
    }
  }

  BuildCache cache(ctx.compiler, req.cache_root / "builds");
  int sm = sm_of(req.arch);
  for (const auto& [k, sets] : targets) {
    auto point = resolve_point(p, *k, sets);
    if (!point) return Unexpected(point.error());
    SassKernelReport kr;
    kr.kernel = k->name;
    kr.point = *point;
    auto b = cache.build(compile_request(p, *k, *point, req.arch));
    if (!b) return Unexpected(b.error());
    kr.build = *b;
    if (!b->ok) {
      kr.error = "does not compile";
      for (const Method* m : methods)
        kr.verdicts.push_back(unchecked_method(*m, SassVerdictKind::not_applicable,
                                               "no binary: the kernel does not compile"));
      report.kernels.push_back(std::move(kr));
      continue;
    }
    if (is_python(b->module_kind)) {  // a Triton kernel, compiled just in time in the worker
      kr.error =
          "a Triton kernel: Triton compiles it at run time, in the worker, so there is no "
          "binary here to disassemble";
      for (const Method* m : methods)
        kr.verdicts.push_back(unchecked_method(*m, SassVerdictKind::unverifiable, kr.error));
      report.kernels.push_back(std::move(kr));
      continue;
    }
    bool library = b->module_kind == ModuleKind::solve_library;
    auto dis = disassemble(ctx.runner, b->cubin_path, library);
    if (!dis) {
      kr.error = dis.error().message;
      for (const Method* m : methods)
        kr.verdicts.push_back(
            unchecked_method(*m, SassVerdictKind::unverifiable, dis.error().message));
      report.kernels.push_back(std::move(kr));
      continue;
    }
    kr.disassembler = dis->tool;
    auto functions = parse_sass(dis->text);
    SassFunction merged;
    if (library && !functions.empty()) merged = merge_functions(functions);
    const SassFunction* f = library ? (functions.empty() ? nullptr : &merged)
                                    : find_function(functions, b->lowered_entry);
    if (!f) {
      kr.error = library ? "the solve() library embeds no device code"
                         : "the disassembly has no function " + b->lowered_entry;
      for (const Method* m : methods)
        kr.verdicts.push_back(unchecked_method(*m, SassVerdictKind::unverifiable, kr.error));
      report.kernels.push_back(std::move(kr));
      continue;
    }
    kr.function = *f;
    kr.facts = sass_facts(*f);
    for (const Method* m : methods) kr.verdicts.push_back(verify_method(*m, *f, sm));
    report.kernels.push_back(std::move(kr));
  }
  if (req.vs && report.kernels.size() == 2 && report.kernels[0].facts && report.kernels[1].facts)
    report.diff = sass_diff(report.kernels[0].function, report.kernels[1].function);
  return report;
}

json to_json(const SassReport& r) {
  json kernels = json::array();
  for (const auto& k : r.kernels) {
    json verdicts = json::array();
    for (const auto& v : k.verdicts) verdicts.push_back(to_json(v));
    kernels.push_back({{"kernel", k.kernel},
                       {"params", k.point},
                       {"lowered_entry", k.build.lowered_entry},
                       {"build_key", k.build.key},
                       {"resources", k.build.resources},
                       {"disassembler", k.disassembler},
                       {"facts", k.facts ? to_json(*k.facts) : json(nullptr)},
                       {"methods", verdicts},
                       {"error", k.error}});
  }
  json diff = json::array();
  for (const auto& d : r.diff)
    diff.push_back({{"key", d.key}, {"before", d.before}, {"after", d.after}});
  return {{"schema_version", 1}, {"command", "sass"}, {"problem", r.problem},      {"arch", r.arch},
          {"kernels", kernels},  {"diff", diff},      {"exit_code", r.exit_code()}};
}

}  // namespace kopt::evaluate
