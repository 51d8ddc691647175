#pragma once
// The FLOPs of a KernelBench problem's forward, from the torch calls the import script
// recorded (python/kopt_kernelbench_import.py: each call's name, its tensor arguments' shapes,
// its result's shape and the few facts a formula needs: a pool's kernel size, an einsum's
// equation, a dropout's p and training flag).
//
// The roofline's convention: a multiply-add is 2 FLOPs, a transcendental function 1, a
// reduction over n elements n. Calls that do no arithmetic (views, copies, concatenation,
// masks, creation, casts) cost 0. A call kopt has no formula for leaves the flops out.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/kernelbench_shape_namer.hpp"

namespace kopt {

struct KernelbenchCost {
  std::optional<std::string> flops;  // over the namer's dims; none where an op is unknown
  std::string family;  // the heaviest kind of op ("gemm", "convolution", ...); may be empty
  std::vector<std::string> unknown_ops;  // the calls without a formula, in first-seen order
};

// `ops`: the import script's "ops" array. Malformed facts are an internal error.
Expected<KernelbenchCost> kernelbench_cost(const nlohmann::json& ops, ShapeNamer& namer);

// Whether kopt costs a call of this name (a formula, or known to be free); for surveys.
bool kernelbench_op_known(const std::string& name);

}  // namespace kopt
