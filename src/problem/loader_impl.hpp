#pragma once
// Internal to the loader: the reader of kopt.toml, section by section. The problem's own
// sections (dims, tensors, cost, tolerances, [check]) are read in loader.cpp, the kernels and
// the reference in kernel_reader.cpp.
#include <array>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "kopt/problem/problem.hpp"
#include "toml_reader.hpp"

namespace kopt::detail {
namespace fs = std::filesystem;

class Loader {
 public:
  Loader(const std::string& file, fs::path dir, const std::map<std::string, std::int64_t>& dims)
      : m_file(file), m_dir(std::move(dir)), m_dim_overrides(dims) {}

  Problem load(const toml::table& root);

 private:
  [[noreturn]] void fail(int line, const std::string& field, const std::string& why) const;

  const toml::table& table_at(TomlReader& r, const std::string& key, bool required);

  Expr parse_expr(const std::string& text, int line, const std::string& field,
                  const std::set<std::string>& allowed, const std::string& allowed_what);

  void read_dims(TomlReader& r, Problem& p);

  InitSpec read_init(const toml::node& n, const std::string& field, DType dtype);

  Tolerance read_tolerance(const toml::node& n, const std::string& field, Tolerance base);

  void read_tensors(TomlReader& r, Problem& p);

  void read_shape(TomlReader& tr, TensorSpec& ts, const Problem& p);

  void read_cost(TomlReader& r, Problem& p);

  // [check] dims = { n = 65536 }: another shape every kernel is checked at too (seed 1), so
  // that a kernel which hard-codes the problem's shape is caught.
  void read_check(TomlReader& r, Problem& p);
  void read_axes(TomlReader& r, Problem& p);
  void read_zips(const toml::node& v, Problem& p);
  void read_shapes(TomlReader& r, Problem& p);
  void read_goal(TomlReader& r, Problem& p);

  void read_tolerances(TomlReader& r, Problem& p);
  // `precision = "tf32"` (problem/precision.hpp), at the top or in a [[kernels]] entry.
  Precision read_precision(TomlReader& r);

  std::array<Expr, 3> read_dim3(TomlReader& kr, const std::string& key, bool required,
                                const std::set<std::string>& names, SourceRef& where);

  void read_params(TomlReader& kr, KernelSpec& k);

  // [kernels.methods]: METHOD = { on = "P=V [P=V...]", off = "P=V [P=V...]" }, over declared
  // values.
  void read_methods(TomlReader& kr, KernelSpec& k);

  std::map<std::string, std::int64_t> read_assignments(const KernelSpec& k, const std::string& text,
                                                       int line, const std::string& field);

  // `source`: one file, or the same kernel in several languages (one file per language).
  void read_sources(TomlReader& kr, KernelSpec& k, bool is_reference);

  // A solve() kernel's arguments come from its signature, each matched by name: a const
  // pointer to an input tensor, another pointer to an output, a scalar to a dim or param.
  void read_solve_args(TomlReader& kr, KernelSpec& k, const Problem& p);

  void read_constraints(TomlReader& kr, KernelSpec& k, const std::set<std::string>& names);

  // Why `k` cannot use a CUDA-only feature (an arch target, tensor-map args); empty when it
  // can. `every_source`: its ports in other languages would have to take it too.
  std::string not_cuda(const KernelSpec& k, const Problem& p, bool is_reference,
                       bool every_source) const;

  // arch = "sm_90a": the kernel is built for this target rather than the device's.
  void read_arch(TomlReader& kr, KernelSpec& k, const Problem& p, bool is_reference);

  KernelSpec read_kernel(const toml::table& t, const std::string& field, const Problem& p,
                         bool is_reference);

  void read_reference(TomlReader& r, Problem& p);

  void read_kernels(TomlReader& r, Problem& p);

  const std::string& m_file;
  fs::path m_dir;
  const std::map<std::string, std::int64_t>& m_dim_overrides;
  std::set<std::string> m_dim_names;
  std::vector<std::string> m_cxx_flags;
};

}  // namespace kopt::detail
