#include "kopt/problem/param_space.hpp"

#include <algorithm>
#include <limits>

#include "kopt/core/suggest.hpp"

namespace kopt {

std::string point_to_string(const ParamPoint& point) {
  std::string out;
  for (const auto& [k, v] : point) out += (out.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return out.empty() ? "(no params)" : out;
}

Scope point_scope(const Scope& dims, const ParamPoint& point) {
  Scope s = dims;
  for (const auto& [k, v] : point) s[k] = v;
  return s;
}

Expected<const Constraint*> violated_constraint(const KernelSpec& kernel, const Scope& dims,
                                                const ParamPoint& point) {
  Scope scope = point_scope(dims, point);
  for (const auto& c : kernel.constraints) {
    auto v = c.expr.evaluate(scope);
    if (!v) {
      Error e = v.error();
      e.line = c.where.line;
      e.field = c.where.field;
      return Unexpected(e);
    }
    if (as_double(*v) == 0.0) return &c;
  }
  return nullptr;
}

std::uint64_t product_size(const KernelSpec& kernel) {
  std::uint64_t n = 1;
  for (const auto& p : kernel.params)
    if (__builtin_mul_overflow(n, p.values.size(), &n))
      return std::numeric_limits<std::uint64_t>::max();
  return n;
}

Expected<std::size_t> for_each_point(const KernelSpec& kernel, const Scope& dims, std::size_t limit,
                                     const std::function<bool(const ParamPoint&)>& visit) {
  std::vector<std::size_t> idx(kernel.params.size(), 0);
  std::size_t visited = 0;
  for (const auto& p : kernel.params)
    if (p.values.empty()) return visited;
  while (visited < limit) {
    ParamPoint point;
    for (std::size_t i = 0; i < idx.size(); ++i)
      point[kernel.params[i].name] = kernel.params[i].values[idx[i]];
    auto bad = violated_constraint(kernel, dims, point);
    if (!bad) return Unexpected(bad.error());
    if (*bad == nullptr) {
      ++visited;
      if (!visit(point)) return visited;
    }
    // Odometer increment, last parameter fastest.
    std::size_t i = idx.size();
    while (i > 0) {
      --i;
      if (++idx[i] < kernel.params[i].values.size()) break;
      idx[i] = 0;
      if (i == 0) return visited;
    }
    if (idx.empty()) return visited;
  }
  return visited;
}

Expected<ParamPoint> default_point(const Problem& problem, const KernelSpec& kernel) {
  ParamPoint point;
  for (const auto& p : kernel.params) point[p.name] = p.default_value;
  Scope dims = problem.dim_scope();
  auto bad = violated_constraint(kernel, dims, point);
  if (!bad) return Unexpected(bad.error());
  if (*bad == nullptr) return point;
  std::optional<ParamPoint> first;
  auto n = for_each_point(kernel, dims, 1, [&](const ParamPoint& p) {
    first = p;
    return false;
  });
  if (!n) return Unexpected(n.error());
  if (!first)
    return Unexpected(
        bad_input("no point of the parameter space satisfies the constraints (" +
                      std::to_string(product_size(kernel)) + " points tried)",
                  problem.spec_path.string(),
                  kernel.constraints.empty() ? kernel.where.line : kernel.constraints[0].where.line,
                  kernel.where.field + ".constraints"));
  return *first;
}

Expected<std::vector<const KernelSpec*>> select_kernels(const Problem& problem,
                                                        const std::vector<std::string>& names) {
  std::vector<const KernelSpec*> chosen;
  for (const auto& name : names) {
    const KernelSpec* k = problem.find_kernel(name);
    if (!k) {
      std::string known;
      std::vector<std::string> names_known;
      for (const auto& kk : problem.kernels) {
        known += (known.empty() ? "" : ", ") + kk.name;
        names_known.push_back(kk.name);
      }
      std::string skipped;
      for (const auto& s : problem.skipped_kernels)
        if (s == name) skipped = "; its source is in a language this device does not run";
      return Unexpected(bad_input("--kernel " + name + ": no such kernel" +
                                      did_you_mean(name, names_known) + " (known: " + known + ")" +
                                      skipped,
                                  problem.spec_path.string()));
    }
    chosen.push_back(k);
  }
  if (names.empty())
    for (const auto& k : problem.kernels) chosen.push_back(&k);
  return chosen;
}

Expected<void> check_assignments_used(const Problem& problem,
                                      const std::vector<const KernelSpec*>& kernels,
                                      const std::map<std::string, std::int64_t>& assignments,
                                      const std::string& flag) {
  for (const auto& [name, value] : assignments) {
    bool used = false;
    for (const KernelSpec* k : kernels) used = used || k->find_param(name);
    if (!used)
      return Unexpected(bad_input(flag + " " + name + "=" + std::to_string(value) +
                                      ": no selected kernel has a param named '" + name + "'",
                                  problem.spec_path.string()));
  }
  return {};
}

std::map<std::string, std::int64_t> assignments_for(
    const KernelSpec& kernel, const std::map<std::string, std::int64_t>& assignments) {
  std::map<std::string, std::int64_t> own;
  for (const auto& [name, value] : assignments)
    if (kernel.find_param(name)) own[name] = value;
  return own;
}

Expected<ParamPoint> resolve_point(const Problem& problem, const KernelSpec& kernel,
                                   const std::map<std::string, std::int64_t>& overrides) {
  auto point = default_point(problem, kernel);
  if (!point) return point;
  for (const auto& [k, v] : overrides) {
    const ParamSpec* param = kernel.find_param(k);
    if (!param) continue;
    if (std::find(param->values.begin(), param->values.end(), v) == param->values.end()) {
      std::string declared;
      for (auto d : param->values) declared += (declared.empty() ? "" : ", ") + std::to_string(d);
      return Unexpected(
          bad_input(k + "=" + std::to_string(v) + " is outside the parameter space of kernel '" +
                        kernel.name + "' (declared values: " + declared + ")",
                    problem.spec_path.string(), param->where.line, param->where.field));
    }
    (*point)[k] = v;
  }
  auto bad = violated_constraint(kernel, problem.dim_scope(), *point);
  if (!bad) return Unexpected(bad.error());
  if (*bad)
    return Unexpected(bad_input("point " + point_to_string(*point) + " of kernel '" + kernel.name +
                                    "' violates constraint '" + (*bad)->expr.text() + "'",
                                problem.spec_path.string(), (*bad)->where.line,
                                (*bad)->where.field));
  return point;
}

}  // namespace kopt
