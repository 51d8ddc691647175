#pragma once
// The parsed problem directory: kopt.toml (docs/architecture.md §3). Plain records; loader.hpp
// builds them.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/dtype.hpp"
#include "kopt/problem/expr.hpp"
#include "kopt/problem/precision.hpp"

namespace kopt {

// Where a value came from, for error messages: "kopt.toml:14" and "tensors[1].shape".
struct SourceRef {
  int line = 0;
  std::string field;
};

struct Dim {
  std::string name;
  std::int64_t value = 0;
  SourceRef where;
};

enum class Role { input, output, inout };
std::string_view role_name(Role r);

enum class InitKind { normal, uniform, randint, arange, constant };
std::string_view init_kind_name(InitKind k);
// The kind init_kind_name names, or none.
std::optional<InitKind> parse_init_kind(std::string_view name);

// normal: a=mean b=std; uniform: [a, b); randint: integers in [a, b); arange: a + i*b;
// constant: a (only when asked for explicitly: inputs are never all-zero by default).
struct InitSpec {
  InitKind kind = InitKind::normal;
  double a = 0.0;
  double b = 1.0;
};

struct Tolerance {
  double atol = 0.0;
  double rtol = 0.0;
};
// Documented defaults (docs/problem-spec.md): exact for integers.
Tolerance default_tolerance(DType t);

struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<Expr> shape;
  Role role = Role::input;
  InitSpec init;
  std::optional<Tolerance> tolerance;  // overrides the per-dtype one
  SourceRef where;
};

// A tensor passed as a TMA descriptor (a CUtensorMap, by value) rather than a pointer:
// `args = [{ tensor_map = "A", box = ["BM", "BK"], swizzle = 128 }]`. The box has one
// extent per dim of the tensor's shape, in the shape's order (outermost first).
struct TensorMapSpec {
  std::vector<Expr> box;
  int swizzle = 0;  // bytes: 0, 32, 64 or 128
};

// One kernel argument: a tensor (device pointer, or a tensor map of it) or a scalar
// computed from dims and params.
struct ArgSpec {
  std::string tensor;                       // non-empty for a tensor argument
  std::optional<TensorMapSpec> tensor_map;  // with `tensor`: a CUtensorMap of it, not a pointer
  Expr scalar;                              // for a scalar argument
  DType scalar_dtype = DType::i32;
  SourceRef where;
};

struct LaunchSpec {
  std::array<Expr, 3> grid;
  std::array<Expr, 3> block;
  Expr shared_mem;  // dynamic shared memory in bytes
  SourceRef grid_where, block_where, shared_where;
};

struct ParamSpec {
  std::string name;
  std::vector<std::int64_t> values;
  std::int64_t default_value = 0;
  SourceRef where;
};

struct Constraint {
  Expr expr;
  SourceRef where;
};

// An optimization method (an id of the method catalog) as this kernel switches it: the
// parameter values that turn it on, and those that turn it off.
struct MethodToggle {
  std::string method;
  std::map<std::string, std::int64_t> on, off;
  SourceRef where;
};

// A folder of headers a kernel includes (`include_dirs`): a path (relative to the problem
// dir), or the folder of an installed Python package plus a path inside it, for headers
// shipped on PyPI (CUTLASS's in nvidia-cutlass: cutlass_library/source/include).
struct IncludeDir {
  std::string path;            // the folder, or the path inside the package
  std::string python_package;  // non-empty: the import name of the package ("cutlass_library")
  std::string pip;             // what to `pip install` when it is missing ("nvidia-cutlass")
  SourceRef where;
};

// The language a kernel source is written in, from its file name: .cu (and .cuh) CUDA C++,
// .cl OpenCL C, .py Triton (setup / run_kernel). A backend runs the kernels it has a source for.
enum class KernelLanguage { cuda, opencl, triton };
std::string_view kernel_language_name(KernelLanguage l);
std::optional<KernelLanguage> kernel_language_of(const std::filesystem::path& source);
// The same, a source without a recognized extension counting as CUDA (kopt's first language).
KernelLanguage language_of(const std::filesystem::path& source);

// A kernel: a candidate, or the reference when it is a kernel. One kernel may come in
// several languages (`source = ["kernel.cu", "kernel.cl"]`) that share its args, launch,
// params and methods; `source` is the one the selected backend builds.
struct KernelSpec {
  std::string name;
  std::filesystem::path source;                // relative to the problem dir
  std::vector<std::filesystem::path> sources;  // every port, `source` among them
  std::string entry;
  std::vector<ArgSpec> args;
  LaunchSpec launch;
  std::vector<ParamSpec> params;
  std::vector<Constraint> constraints;
  std::vector<std::string> compile_options;
  std::vector<IncludeDir> include_dirs;  // beside the problem dir, which is always searched
  std::vector<MethodToggle> methods;     // [kernels.methods]
  // An arch-specific target such as "sm_90a" (problem/arch_target.hpp); empty: the device's.
  std::string arch;
  SourceRef arch_where;
  // A lower precision this kernel may compute in (problem/precision.hpp); none: the problem's.
  std::optional<Precision> precision;
  SourceRef where;
  // kernel: a __global__ function kopt launches; solve: `extern "C" void solve(...)` that
  // launches its own kernels, built with nvcc into a shared library (args from its signature).
  enum class Abi { kernel, solve } abi = Abi::kernel;

  const ParamSpec* find_param(std::string_view param) const;
  const MethodToggle* find_method(std::string_view method) const;
};

// cuda: a kernel; cpp: C++ on the CPU; python: a ref.py whose reference(**tensors, **dims)
// writes the outputs in place (PyTorch), with optional module-level atol / rtol.
enum class ReferenceKind { cuda, cpp, python };
std::string_view reference_kind_name(ReferenceKind k);  // as kopt.toml spells it

struct ReferenceSpec {
  ReferenceKind kind = ReferenceKind::cuda;
  KernelSpec kernel;  // cpp: source, entry and args only
  std::vector<std::string> cxx_flags;
};

struct CostSpec {
  Expr flops;
  Expr bytes;
};

// The cost formulas evaluated at the problem's dims; empty where there is no formula.
struct Cost {
  std::optional<double> flops, bytes;
};

struct Problem {
  std::filesystem::path dir;
  std::filesystem::path spec_path;  // dir / "kopt.toml", as the user named it
  std::string name;
  std::string family;
  std::string description;
  std::vector<Dim> dims;
  std::vector<TensorSpec> tensors;
  std::optional<CostSpec> cost;
  std::map<DType, Tolerance> tolerances;  // per-dtype, defaults filled in
  // `precision`: the lowest precision its kernels may multiply in; none: its tensors' own.
  std::optional<Precision> precision;
  // [check] dims: another shape (overrides of some dims) every kernel is checked at too.
  std::map<std::string, std::int64_t> check_dims;
  // [check] boundary_shapes = false: kopt check does not derive boundary shapes
  // (problem/boundary_shapes.hpp) for this problem.
  bool boundary_shapes = true;
  // [axes]: the shapes bench and check run at, the product of these values of some dims
  // (problem/shape_set.hpp); none: the dims alone.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> axes;
  // [axes] zip = [["M", "N"]]: axes that take their values together, the i-th of each (nvbench's
  // zipped axes), instead of every combination.
  std::vector<std::vector<std::string>> axis_zips;
  // [shapes]: named shapes, each some dims overridden (`decode = { M = 1 }`), run beside the
  // product of the axes.
  struct NamedShape {
    std::string name;
    std::vector<std::pair<std::string, std::int64_t>> dims;  // in the order written
  };
  std::vector<NamedShape> shapes;
  // [goal]: what "fast" means over the shapes. latency: each shape on its own (a champion per
  // shape, a dispatch table); throughput: one configuration for all of them, judged by the
  // weighted sum of their times (weights by shape name or label, 1 where not given).
  enum class Goal { latency, throughput } goal = Goal::latency;
  std::map<std::string, double> goal_weights;
  ReferenceSpec reference;
  std::vector<KernelSpec> kernels;

  const TensorSpec* find_tensor(std::string_view tensor) const;
  const KernelSpec* find_kernel(std::string_view kernel) const;
  // Kernels with no source this device runs, left out by select_runnable (and named here).
  std::vector<std::string> skipped_kernels;
  Tolerance tolerance_for(const TensorSpec& t) const;
  Scope dim_scope() const;
  Cost cost_at_dims() const;
  bool has_half_data() const;  // any f16 or bf16 tensor
};

// Points every kernel at its first source in one of `languages` (the device's, in its order
// of preference: backend/device_family.hpp) and leaves out those with none. Kernels of several
// languages stay side by side (CUDA C++ and Triton on a CUDA GPU). An Error (bad input,
// naming the file and line) when the reference is a kernel in none of them, or when no kernel
// is left (a problem with none at all passes when `allow_no_kernels`: bench --vs-torch times a
// fresh import's baselines).
Expected<void> select_runnable(Problem& p, const std::vector<KernelLanguage>& languages,
                               bool allow_no_kernels = false);

}  // namespace kopt
