#pragma once
// `kopt sass`: build a kernel at a point, disassemble it, and report its facts, the verdict of
// each method's signature, and what changed against another point (--vs).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/analysis/method_catalog.hpp"
#include "kopt/analysis/sass_facts.hpp"
#include "kopt/backend/build.hpp"
#include "kopt/core/process.hpp"
#include "kopt/problem/param_space.hpp"

namespace kopt::evaluate {

struct SassRequest {
  std::vector<std::string> kernels;  // empty: every kernel (ignored with vs)
  std::map<std::string, std::int64_t> sets;
  std::optional<std::map<std::string, std::int64_t>> vs;  // a second point of the one kernel
  std::vector<std::string> methods;                       // empty: every method of the catalog
  std::string arch = "sm_90";
  std::filesystem::path cache_root;
};

struct SassKernelReport {
  std::string kernel;
  ParamPoint point;
  Build build;
  std::string disassembler;
  std::optional<SassFacts> facts;
  std::vector<MethodVerdict> verdicts;
  SassFunction function;  // the parsed stream (for diffs)
  std::string error;
};

struct SassReport {
  std::string problem;
  std::string arch;
  std::vector<SassKernelReport> kernels;
  std::vector<SassDiffEntry> diff;  // kernels[0] -> kernels[1] with --vs
  bool methods_requested = false;
  // 0 fine; 1 a requested method is missing or a kernel did not build; 3 no disassembler.
  int exit_code() const;
};

struct SassContext {
  Compiler& compiler;
  CommandRunner& runner;
  const MethodCatalog& catalog;
};

Expected<SassReport> run_sass(const Problem& problem, const SassRequest& request, SassContext ctx);

nlohmann::json to_json(const SassReport& r);

}  // namespace kopt::evaluate
