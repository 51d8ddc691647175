#pragma once
// Boundary shapes: the sizes where kernels go wrong, derived from the problem and a kernel's
// constraints so that `kopt check` tries them without being told (one of the agent skills kopt
// replaces checks "representative and boundary shapes"; a kernel that hard-codes its shape is
// wrong there). Two shapes per kernel:
//   tails: every size dim at g * q, q an odd prime near half the declared value (so the size
//          is a multiple of no tile or vector width but g), g the smallest power of two the
//          kernel's constraints accept;
//   ones:  every size dim at the smallest power of two (1 first) the constraints accept.
// A size dim is a dim that some tensor's shape names. Dims are taken in declaration order, each
// with the ones before it already at their new value, so that coupled constraints
// ("batch_size * dim % VEC == 0") hold for the whole shape. A dim is held at its declared value
// where no candidate satisfies the constraints, where it is 2 or less, or where the problem's
// [check] dims keep it (a problem that declares another shape says which dims its kernels must
// handle: those it changes). A kernel that takes a tensor map (TMA) is also held to the strides
// TMA can step: every row of a mapped tensor a multiple of 16 bytes.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kopt/problem/param_space.hpp"

namespace kopt {

enum class BoundaryKind { tails, ones };
std::string_view boundary_kind_name(BoundaryKind k);

struct BoundaryShape {
  BoundaryKind kind = BoundaryKind::tails;
  std::map<std::string, std::int64_t> dims;  // every dim of the problem
  std::vector<std::string> moved;            // the dims that differ from the declared ones
  std::vector<std::string> held;  // size dims left at their value by the constraints or [check]
  std::string label() const;      // the moved dims: "M=509 N=509"
};

// The boundary shapes of `kernel` at `point` (none differing from the declared dims are left
// out; ones equal to each other are given once).
std::vector<BoundaryShape> boundary_shapes(const Problem& problem, const KernelSpec& kernel,
                                           const ParamPoint& point);

// The largest prime <= n (2 where n < 2).
std::int64_t prime_at_most(std::int64_t n);

}  // namespace kopt
