#pragma once
// `kopt init`: a problem inferred from the files users already have (docs/bare-files.md) — a
// kernel file (a .cu with extern "C" void solve(...), a .cu or .cl with __global__ / __kernel
// functions, a Triton .py with run_kernel(**kwargs)), a ref.py with reference(**kwargs) and
// optional atol/rtol, and dims. What the files say is read here; what only running them tells
// (setup()'s tensors, which tensors reference() writes) comes from the Python probe
// (backend/python/init_probe.hpp) as JSON facts. The result is a kopt.toml with a comment on
// every field kopt guessed; what cannot be inferred is bad input naming the field, why, and
// the flag or line that settles it.
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/problem.hpp"
#include "kopt/problem/solve_abi.hpp"

namespace kopt {

enum class BareKind {
  solve,      // a .cu with extern "C" void solve(...)
  kernels,    // a .cu or .cl with __global__ / __kernel functions kopt launches
  triton,     // a .py with run_kernel(**kwargs)
  model_new,  // a KernelBench ModelNew module
};

// A file's "// kopt:" (or "# kopt:") lines: shapes (`// kopt: A[M, K] B[K, N] C[M, N]`), the
// launch (`// kopt: grid = ceil_div(n, 256)`, `// kopt: block = 256`) and the outputs
// (`// kopt: outputs C`).
struct BareNotes {
  std::map<std::string, std::vector<std::string>> shapes;
  std::vector<std::string> grid, block, outputs;
  std::map<std::string, int> lines;  // of each shape's tensor, "grid", "block", "outputs"
};

struct BareKernelFile {
  std::filesystem::path path;
  BareKind kind = BareKind::solve;
  KernelLanguage language = KernelLanguage::cuda;
  std::vector<KernelSignature> entries;  // solve: one, named "solve"; kernels: each one
  // `#ifndef X` / `#define X 256`: a compile-time param with its default (C sources).
  std::vector<std::pair<std::string, std::int64_t>> tunables;
  BareNotes notes;
};

// What `kopt init FILE... --ref REF --dims ...` was given.
struct BareRequest {
  std::vector<std::filesystem::path> kernels;
  std::optional<std::filesystem::path> ref;  // none: ref.py beside the first kernel, if any
  std::vector<std::pair<std::string, std::int64_t>> dims;  // in the order given
  std::filesystem::path out_dir;                           // where kopt.toml goes
};

// A kernel file read: its kind, signatures, tunables and notes; bad input for a file kopt
// does not take (naming the file and line).
Expected<BareKernelFile> read_bare_kernel(const std::filesystem::path& path);

// The dims the probe runs setup() and reference() at: each dim small and unlike the others, so
// that an extent tells which dim it is; a dim of 16 or less keeps its value.
std::map<std::string, std::int64_t> small_dims(
    const std::vector<std::pair<std::string, std::int64_t>>& dims);

// The first line of every kopt.toml kopt init writes. A kopt.toml that does not start with it
// is the user's and is never replaced (deleting the line keeps an inferred file as it is).
inline constexpr const char* k_inferred_header = "# Inferred by `kopt init`";
// The input hash an inferred kopt.toml's first line records; empty for a user's file.
std::string inferred_hash_of(const std::string& kopt_toml_text);

// A tensor as inferred, with the reason for each of its fields.
struct BareTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::string> shape;  // extents as kopt.toml writes them: dims, numbers, formulas
  Role role = Role::input;
  std::string dtype_why, shape_why, role_why;
  bool dtype_known = false, shape_known = false, role_known = false;
  bool in_signature = false, is_const = false;
  std::string init;  // a TOML inline table from setup()'s values; empty: kopt's default
};

class BareInference {
 public:
  // Reads the kernel files and checks that the dims cover their scalars.
  static Expected<BareInference> start(BareRequest req);

  // The probe's first request (mode "inspect") and its answer: the tensors with their dtypes,
  // shapes and the roles the files settle.
  nlohmann::json inspect_request() const;
  Expected<void> take_inspect(const nlohmann::json& facts);

  // Mode "writes": reference() run once on tensors of the inferred shapes, at small_dims or, when
  // `full`, at the dims themselves; its answer settles the other roles.
  nlohmann::json writes_request(bool full) const;
  Expected<void> take_writes(const nlohmann::json& facts);
  // The bytes of every tensor at the dims (whether a run at full size is cheap enough).
  double bytes_at_dims() const;

  struct Result {
    std::string name;
    std::string kopt_toml;
    std::vector<std::string> guesses;  // one line per guessed field
  };
  Expected<Result> finish() const;

  // A hash of the inputs (files' contents, dims): a kopt.toml inferred from the same inputs is
  // current.
  std::string input_hash() const;
  const BareRequest& request() const { return m_req; }
  const std::vector<BareKernelFile>& files() const { return m_files; }
  const std::vector<BareTensor>& tensors() const { return m_tensors; }

 private:
  BareRequest m_req;
  std::vector<BareKernelFile> m_files;
  std::map<std::string, std::int64_t> m_small;
  std::vector<BareTensor> m_tensors;
  nlohmann::json m_reference;                             // the probe's reference facts
  std::map<std::string, std::int64_t> m_python_tunables;  // run_kernel's int defaults
  std::vector<std::string> m_notes;                       // guesses beyond the fields
  bool m_gemm = false;                                    // the A[M,K] B[K,N] C[M,N] guess
  std::string m_shape_hint;  // where the shapes would be declared, when they were guessed

  BareTensor* find(const std::string& name);
  bool is_dim(const std::string& name) const;
  bool is_tunable(const std::string& name) const;
  Expected<void> collect_tensors(const nlohmann::json& facts);
  Expected<void> infer_shapes(const nlohmann::json& facts);
  Expected<void> check_reference_signature() const;
  std::string numel(const BareTensor& t) const;
};

}  // namespace kopt
