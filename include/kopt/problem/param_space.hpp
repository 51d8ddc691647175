#pragma once
// A kernel's tunable parameter space: points, constraints, the default point.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt {

using ParamPoint = std::map<std::string, std::int64_t, std::less<>>;

std::string point_to_string(const ParamPoint& point);  // "BLOCK=256 VEC=4"
Scope point_scope(const Scope& dims, const ParamPoint& point);

// Which constraint a point violates, if any (nullptr: it satisfies all).
Expected<const Constraint*> violated_constraint(const KernelSpec& kernel, const Scope& dims,
                                                const ParamPoint& point);

// Number of points in the full product, before constraints (saturates at UINT64_MAX).
std::uint64_t product_size(const KernelSpec& kernel);

// Calls visit(point) on each point satisfying the constraints, in lexicographic order of the
// value lists, until visit returns false or `limit` points were visited.
Expected<std::size_t> for_each_point(const KernelSpec& kernel, const Scope& dims, std::size_t limit,
                                     const std::function<bool(const ParamPoint&)>& visit);

// The declared defaults; if none were declared and they violate a constraint, the first
// point that satisfies all of them.
Expected<ParamPoint> default_point(const Problem& problem, const KernelSpec& kernel);

// The kernels `names` choose (--kernel, repeatable), in that order; every kernel of the
// problem when there is none. An unknown name is bad input naming the known ones.
Expected<std::vector<const KernelSpec*>> select_kernels(const Problem& problem,
                                                        const std::vector<std::string>& names);

// Command-line assignments (--set, --vs) over several kernels: each NAME must be a param of
// at least one of them (an unknown one is a typo, bad input); `flag` names the option.
Expected<void> check_assignments_used(const Problem& problem,
                                      const std::vector<const KernelSpec*>& kernels,
                                      const std::map<std::string, std::int64_t>& assignments,
                                      const std::string& flag);
// The assignments that name params of `kernel`.
std::map<std::string, std::int64_t> assignments_for(
    const KernelSpec& kernel, const std::map<std::string, std::int64_t>& assignments);

// The default point with overrides applied (--set), each a declared value of its param,
// checked against the constraints.
Expected<ParamPoint> resolve_point(const Problem& problem, const KernelSpec& kernel,
                                   const std::map<std::string, std::int64_t>& overrides);

}  // namespace kopt
