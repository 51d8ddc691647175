// A kernel that hard-codes the problem's shape computes it right at the declared dims only:
// [check] dims gives another shape every passing kernel is checked at too (seed 1).
#include <fmt/format.h>

#include "kopt/evaluate/checker.hpp"

namespace kopt::evaluate {

Expected<void> check_other_shape(const Problem& p, const CheckOptions& o, CheckContext ctx,
                                 CheckReport& report) {
  if (p.check_dims.empty() || o.reference_only) return {};
  std::map<std::string, std::int64_t> dims;
  bool same = true;
  for (const auto& d : p.dims) {
    auto it = p.check_dims.find(d.name);
    dims[d.name] = it == p.check_dims.end() ? d.value : it->second;
    same = same && dims[d.name] == d.value;
  }
  if (same) return {};  // it is the shape just checked
  std::string shape;
  for (const auto& [name, value] : p.check_dims)
    shape += fmt::format("{}{}={}", shape.empty() ? "" : " ", name, value);
  CheckOptions co = o;
  co.seeds = 1;
  co.secret_seed = false;
  co.secret_dir.clear();
  co.kernels.clear();
  co.sets.clear();
  co.points.clear();
  std::vector<KernelCheck*> passed;
  for (auto& kc : report.kernels)
    if (kc.status == KernelStatus::passed) {
      co.points.push_back(
          {kc.kernel, std::map<std::string, std::int64_t>(kc.point.begin(), kc.point.end())});
      passed.push_back(&kc);
    }
  if (passed.empty()) return {};
  Problem other = p;  // the same kernels, sources and language, at the other dims
  for (auto& d : other.dims) d.value = dims.at(d.name);
  auto r = run_check(other, co, ctx);
  if (!r || r->kernels.size() != passed.size()) {
    report.other_shape_note =
        "not checked at " + shape + ": " + (r ? std::string("no kernel ran") : r.error().message);
    return {};
  }
  report.other_shape = shape;
  for (std::size_t i = 0; i < passed.size(); ++i) {
    const KernelCheck& at = r->kernels[i];
    if (at.status == KernelStatus::passed) continue;
    KernelCheck& kc = *passed[i];
    std::string what = at.error;
    for (const auto& seed : at.seeds)
      for (const auto& c : seed.outputs)
        if (!c.passed && what.empty())
          what = fmt::format("{} of {} elements of '{}' differ from the reference", c.mismatches,
                             c.numel, c.tensor);
    kc.status = KernelStatus::mismatch;
    kc.error = fmt::format(
        "at the other shape ({}, [check] dims): {}{}: it does not compute the problem at other "
        "sizes (a shape hard-coded into it?)",
        shape, kernel_status_name(at.status), what.empty() ? "" : ", " + what);
  }
  return {};
}

}  // namespace kopt::evaluate
