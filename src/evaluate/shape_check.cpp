// A kernel that hard-codes the problem's shape computes it right at the declared dims only:
// every passing kernel is checked once more (seed 1) at [check] dims and at its boundary shapes.
#include <fmt/format.h>

#include "kopt/evaluate/checker.hpp"
#include "kopt/problem/boundary_shapes.hpp"

namespace kopt::evaluate {

std::string_view shape_origin_name(ShapeOrigin o) {
  switch (o) {
    case ShapeOrigin::check_dims:
      return "[check] dims";
    case ShapeOrigin::boundary_tails:
      return "boundary (tails)";
    case ShapeOrigin::boundary_ones:
      return "boundary (ones)";
  }
  return "?";
}

namespace {

// One other shape and the passing kernels to check there.
struct ShapePlan {
  ShapeOrigin origin;
  std::map<std::string, std::int64_t> dims;  // every dim
  std::string label;
  std::vector<std::string> held;
  std::vector<KernelCheck*> kernels;
};

std::string kernel_label(const KernelCheck& kc) {
  return kc.point.empty() ? kc.kernel : kc.kernel + " " + point_to_string(kc.point);
}

std::vector<ShapePlan> plan_shapes(const Problem& p, const CheckOptions& o,
                                   const std::vector<KernelCheck*>& passed) {
  std::vector<ShapePlan> plans;
  if (!p.check_dims.empty()) {
    ShapePlan plan{ShapeOrigin::check_dims, {}, "", {}, passed};
    bool same = true;
    for (const auto& d : p.dims) {
      auto it = p.check_dims.find(d.name);
      plan.dims[d.name] = it == p.check_dims.end() ? d.value : it->second;
      same = same && plan.dims[d.name] == d.value;
    }
    for (const auto& [name, value] : p.check_dims)
      plan.label += fmt::format("{}{}={}", plan.label.empty() ? "" : " ", name, value);
    if (!same) plans.push_back(std::move(plan));  // else it is the shape just checked
  }
  if (!o.boundary_shapes || !p.boundary_shapes) return plans;
  for (KernelCheck* kc : passed) {
    const KernelSpec* k = p.find_kernel(kc->kernel);
    if (!k) continue;
    for (const BoundaryShape& b : boundary_shapes(p, *k, kc->point)) {
      ShapeOrigin origin =
          b.kind == BoundaryKind::tails ? ShapeOrigin::boundary_tails : ShapeOrigin::boundary_ones;
      auto same = std::find_if(plans.begin(), plans.end(), [&](const ShapePlan& s) {
        return s.origin == origin && s.dims == b.dims;
      });
      if (same != plans.end()) {
        same->kernels.push_back(kc);
        continue;
      }
      plans.push_back({origin, b.dims, b.label(), b.held, {kc}});
    }
  }
  return plans;
}

// What went wrong with one kernel at the other shape, in words.
std::string what_failed(const KernelCheck& at) {
  std::string what = at.error;
  for (const auto& seed : at.seeds)
    for (const auto& c : seed.outputs)
      if (!c.passed && what.empty())
        what = fmt::format("{} of {} elements of '{}' differ from the reference", c.mismatches,
                           c.numel, c.tensor);
  return what;
}

}  // namespace

Expected<void> check_other_shape(const Problem& p, const CheckOptions& o, CheckContext ctx,
                                 CheckReport& report) {
  if (o.reference_only) return {};
  std::vector<KernelCheck*> passed;
  for (auto& kc : report.kernels)
    if (kc.status == KernelStatus::passed) passed.push_back(&kc);
  if (passed.empty()) return {};
  for (ShapePlan& plan : plan_shapes(p, o, passed)) {
    const bool declared = plan.origin == ShapeOrigin::check_dims;
    ShapeCheck sc{plan.origin, plan.label, {}, {}, plan.held, ""};
    CheckOptions co = o;
    co.seeds = 1;
    co.secret_seed = false;
    co.secret_dir.clear();
    co.kernels.clear();
    co.sets.clear();
    co.points.clear();
    for (KernelCheck* kc : plan.kernels) {
      co.points.push_back(
          {kc->kernel, std::map<std::string, std::int64_t>(kc->point.begin(), kc->point.end())});
      sc.kernels.push_back(kernel_label(*kc));
    }
    Problem other = p;  // the same kernels, sources and language, at the other dims
    for (auto& d : other.dims) d.value = plan.dims.at(d.name);
    auto r = run_check(other, co, ctx);
    if (!r || r->kernels.size() != plan.kernels.size()) {
      sc.note = "not checked at " + plan.label + ": " +
                (r ? std::string("no kernel ran")
                   : (declared ? "" : "the reference does not run there: ") + r.error().message);
      sc.kernels.clear();
      if (declared) report.other_shape_note = sc.note;
      report.shape_checks.push_back(std::move(sc));
      continue;
    }
    if (declared) report.other_shape = plan.label;
    for (std::size_t i = 0; i < plan.kernels.size(); ++i) {
      const KernelCheck& at = r->kernels[i];
      if (at.status == KernelStatus::passed) continue;
      KernelCheck& kc = *plan.kernels[i];
      std::string what = what_failed(at);
      if (!declared && at.status == KernelStatus::compile_failed) {
        sc.note += fmt::format("{}{} does not build at {}: {}", sc.note.empty() ? "" : "; ",
                               kernel_label(kc), plan.label, what);
        continue;
      }
      sc.failed.push_back(kernel_label(kc));
      if (kc.status != KernelStatus::passed) continue;  // failed at an earlier shape: said there
      kc.status = KernelStatus::mismatch;
      kc.error = fmt::format(
          "at the other shape ({}, {}): {}{}: it does not compute the problem at other sizes (a "
          "shape hard-coded into it?)",
          plan.label, shape_origin_name(plan.origin), kernel_status_name(at.status),
          what.empty() ? "" : ", " + what);
    }
    report.shape_checks.push_back(std::move(sc));
  }
  return {};
}

}  // namespace kopt::evaluate
