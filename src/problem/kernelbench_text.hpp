#pragma once
// The files of a KernelBench import (problem_from_kernelbench): kopt.toml, ref.py and the
// ModelNew adapter, written from what the import script's facts became.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kopt/problem/kernelbench_cost.hpp"
#include "kopt/problem/kernelbench_shape_namer.hpp"

namespace kopt::kernelbench_text {

struct TensorOut {
  std::string name;
  std::string dtype;
  std::vector<std::string> shape;
  std::string role;
  std::string init;     // TOML inline table, empty for outputs
  std::string comment;  // where it came from
};

// What the facts became: forward's arguments in order, the problem's tensors, the model's
// parameters and buffers by the tensor that loads them, and its outputs.
struct ImportedTensors {
  std::vector<std::pair<std::string, std::string>>
      forward;  // ("tensor", name) or ("constant", repr)
  std::vector<TensorOut> tensors;
  std::vector<std::pair<std::string, std::string>> parameters;  // model name -> tensor name
  std::vector<std::string> bools;    // u8 tensors that forward takes as bool
  std::vector<std::string> outputs;  // forward's results, in order
};

// kopt.toml of the problem `file_name` (its stem names it), with `notes` as comments.
std::string kopt_toml(const std::string& file_name, const nlohmann::json& facts,
                      const ImportedTensors& t, const KernelbenchCost& cost,
                      const ShapeNamer& namer, const std::vector<std::string>& notes);
// ref.py: reference() and setup_baseline() run model.py's Model on kopt's tensors.
std::string ref_py(const std::string& file_name, const ImportedTensors& t);
// What kopt appends to a ModelNew file to make it a kernel of the problem (run_kernel()).
std::string model_new_adapter(const std::string& file_name, const nlohmann::json& facts,
                              const ImportedTensors& t);

}  // namespace kopt::kernelbench_text
