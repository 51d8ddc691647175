#pragma once
// Inputs that exist as a recipe until a job needs their bytes (tensor_draw.hpp). A Python job
// draws them on its own device, and so does the CUDA executor for a compared run and a bench
// compared on the device (Executor::draws_inputs); every other job of kopt's own (an OpenCL
// kernel, a C++ or CUDA reference, --verify-on host) reads files, which the worker writes here
// from the recipe, once, beside a checksum of them.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "kopt/backend/run_job.hpp"
#include "kopt/core/error.hpp"

namespace kopt {

// The recipe as the protocol and the Python worker read it (null: none).
nlohmann::json draw_json(const std::optional<DrawRecipe>& r);
// The recipe of a tensor of `dtype`; throws std::invalid_argument on a malformed one.
std::optional<DrawRecipe> draw_from(const nlohmann::json& j, DType dtype);

// Writes `t`'s input file from its recipe where it is missing (beside it, "<file>.sum": the
// bytes' checksum, so that a later job need not read them to know it). Returns that checksum;
// the empty string for a tensor without a recipe.
Expected<std::string> materialize_input(const JobTensor& t);

// A job's drawn inputs made files (and its secret seed's, JobTensor::secret_draw), their tokens
// swapped for the real checksums its executor compares with, and swapped back in its result:
// the caller still sees draw_token().
class DrawnFiles {
 public:
  Expected<void> prepare(RunJob& job);
  void restore(RunResult& r) const;

 private:
  std::map<std::string, std::pair<std::string, std::string>> m_real_token;  // by tensor name
};

}  // namespace kopt
