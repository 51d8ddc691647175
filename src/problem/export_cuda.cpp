// The CUDA that `kopt export` writes (export_parts.hpp): a launch function that does what kopt's
// worker does for a kernel of kopt.toml (the launch from its expressions, the arguments in
// order), and a torch binding that takes the dims from the tensors it is given.
#include <fmt/format.h>

#include <regex>
#include <set>

#include "export_parts.hpp"
#include "kopt/core/text.hpp"
#include "kopt/problem/expr_code.hpp"
#include "kopt/problem/solve_abi.hpp"

namespace kopt::detail {
namespace {

// The declared types of ENTRY's parameters (restrict qualifiers left out), where the source
// has a __global__ ENTRY; nullopt where it has none kopt can read (a template's instance).
std::optional<std::vector<std::string>> declared_types(const std::string& source,
                                                       const std::string& entry) {
  static const std::regex k_word("^[A-Za-z_][A-Za-z_0-9]*$");
  if (!std::regex_match(entry, k_word)) return std::nullopt;
  std::regex head("\\b" + entry + "\\s*\\(");
  for (std::sregex_iterator it(source.begin(), source.end(), head), e; it != e; ++it) {
    std::size_t at = static_cast<std::size_t>(it->position(0));
    std::size_t decl = source.find_last_of(";{}", at == 0 ? 0 : at - 1);
    std::string before = source.substr(decl == std::string::npos ? 0 : decl + 1,
                                       at - (decl == std::string::npos ? 0 : decl + 1));
    if (before.find("__global__") == std::string::npos) continue;
    std::size_t open = at + it->length(0);
    int depth = 1;
    std::size_t close = open;
    for (; close < source.size() && depth > 0; ++close) {
      if (source[close] == '(') ++depth;
      if (source[close] == ')') --depth;
    }
    std::string list = source.substr(open, close - open - 1);
    std::vector<std::string> types;
    if (trim(list).empty() || trim(list) == "void") return types;
    int nest = 0;
    std::string cur;
    list += ',';
    for (char c : list) {
      if (c == '<' || c == '(' || c == '[') ++nest;
      if (c == '>' || c == ')' || c == ']') --nest;
      if (c != ',' || nest > 0) {
        cur += c;
        continue;
      }
      std::string p = std::regex_replace(trim(cur), std::regex("\\s*=.*$"), "");
      p = std::regex_replace(p, std::regex("\\b(__restrict__|__restrict|restrict)\\b"), "");
      std::smatch m;
      if (!std::regex_search(p, m, std::regex("([A-Za-z_][A-Za-z_0-9]*)\\s*$")) ||
          m.position(0) == 0)
        return std::nullopt;
      types.push_back(
          trim(std::regex_replace(p.substr(0, m.position(0)), std::regex("\\s+"), " ")));
      cur.clear();
    }
    return types;
  }
  return std::nullopt;
}

// C++ of an expression: dims by name, params as their #defines, sm_count asked of the device.
struct CppNames {
  const Problem& p;
  const ParamPoint& point;
  bool* uses_sm_count;
  Expected<std::string> operator()(const std::string& name) const {
    if (point.count(name)) return "int64_t(" + name + ")";
    for (const auto& d : p.dims)
      if (d.name == name) return name;
    if (name == "sm_count") {
      *uses_sm_count = true;
      return std::string("int64_t(kopt_sm_count)");
    }
    return Unexpected(bad_input("'" + name + "' is no dim or param"));
  }
};

}  // namespace

Expected<std::string> cuda_launch_code(const Problem& p, const KernelSpec& k,
                                       const ParamPoint& point, const std::string& source,
                                       const std::string& function) {
  bool sm_count = false;
  CppNames names{p, point, &sm_count};
  auto cpp = [&](const Expr& e, const SourceRef& where) -> Expected<std::string> {
    auto c = expr_code(e, CodeLanguage::cpp, names);
    if (!c)
      return Unexpected(refusal(p, where, "no C++ for '" + e.text() + "': " + c.error().message));
    return c;
  };
  bool solve = k.abi == KernelSpec::Abi::solve;
  std::vector<std::string> declared;
  if (solve) {
    auto sig = parse_solve_signature(source, k.entry, (p.dir / k.source).string());
    if (!sig) return Unexpected(sig.error());
    for (const auto& s : *sig)
      declared.push_back(
          trim(std::regex_replace(s.type, std::regex("\\b(__restrict__|restrict)\\b"), "")));
  } else if (auto d = declared_types(source, k.entry)) {
    declared = *d;
    if (declared.size() != k.args.size())
      return Unexpected(refusal(p, {k.where.line, k.where.field + ".args"},
                                fmt::format("kopt.toml gives {} arguments; {} takes {}",
                                            k.args.size(), k.entry, declared.size())));
  }
  std::string body;
  for (const auto& c : k.constraints) {
    auto code = cpp(c.expr, c.where);
    if (!code) return Unexpected(code.error());
    body += fmt::format("  if (!({})) return {};\n", *code,
                        cpp_string("the constraint '" + c.expr.text() + "' of kernel " + k.name +
                                   " does not hold at these dims"));
  }
  std::string launch;
  if (!solve) {
    for (const auto& [what, exprs, where] :
         {std::tuple{"grid", &k.launch.grid, k.launch.grid_where},
          std::tuple{"block", &k.launch.block, k.launch.block_where}}) {
      std::string values;
      for (int i = 0; i < 3; ++i) {
        std::string v = "1";
        if (!(*exprs)[i].empty()) {
          auto code = cpp((*exprs)[i], where);
          if (!code) return Unexpected(code.error());
          v = *code;
        }
        values += (i ? ", " : "") + v;
      }
      body += fmt::format("  const int64_t kopt_{}[3] = {{{}}};\n", what, values);
    }
    std::string shared = "0";
    if (!k.launch.shared_mem.empty()) {
      auto code = cpp(k.launch.shared_mem, k.launch.shared_where);
      if (!code) return Unexpected(code.error());
      shared = *code;
    }
    body += "  const int64_t kopt_shared = " + shared + ";\n";
    body +=
        "  for (int i = 0; i < 3; ++i)\n"
        "    if (kopt_grid[i] < 1 || kopt_grid[i] > (i ? 65535 : 2147483647) || kopt_block[i] < "
        "1)\n"
        "      return " +
        cpp_string("the launch of kernel " + k.name + " at these dims is out of CUDA's range") +
        ";\n";
    body += "  if (kopt_shared > 48 * 1024) {\n    cudaError_t e = cudaFuncSetAttribute(" +
            k.entry +
            ", cudaFuncAttributeMaxDynamicSharedMemorySize, int(kopt_shared));\n"
            "    if (e != cudaSuccess) return cudaGetErrorString(e);\n  }\n";
  }
  std::string args;
  for (std::size_t i = 0; i < k.args.size(); ++i) {
    const ArgSpec& a = k.args[i];
    const std::string& type = i < declared.size() ? declared[i] : "";
    std::string value;
    if (a.tensor_map)
      return Unexpected(refusal(p, a.where,
                                "a tensor map argument (a CUtensorMap kopt builds on the host) "
                                "cannot be exported: pass a pointer"));
    if (!a.tensor.empty()) {
      value = type.empty() ? a.tensor : "(" + type + ")" + a.tensor;
    } else {
      auto code = cpp(a.scalar, a.where);
      if (!code) return Unexpected(code.error());
      std::string local = fmt::format("kopt_arg{}", i);
      body += fmt::format("  const auto {} = {};\n", local, *code);
      bool narrow = !is_float(a.scalar_dtype) && dtype_size(a.scalar_dtype) < 8;
      if (narrow)
        body += fmt::format(
            "  if ({} < std::numeric_limits<{}>::min() || {} > std::numeric_limits<{}>::max())\n"
            "    return {};\n",
            local, c_type(a.scalar_dtype), local, c_type(a.scalar_dtype),
            cpp_string("argument '" + a.scalar.text() + "' of kernel " + k.name + " does not fit " +
                       std::string(dtype_name(a.scalar_dtype)) + " at these dims"));
      value = "(" + (type.empty() ? c_type(a.scalar_dtype) : type) + ")" + local;
    }
    args += (i ? ", " : "") + value;
  }
  if (solve) {
    bool message = solve_returns_message(source, k.entry);
    body += "  (void)kopt_stream;  // solve() launches on the stream it chooses\n";
    body += std::string("  ") + (message ? "const char* kopt_message = " : "") + k.entry + "(" +
            args + ");\n";
    if (message) body += "  if (kopt_message) return kopt_message;\n";
  } else {
    body += "  " + k.entry +
            "<<<dim3(unsigned(kopt_grid[0]), unsigned(kopt_grid[1]), unsigned(kopt_grid[2])),\n"
            "       dim3(unsigned(kopt_block[0]), unsigned(kopt_block[1]), "
            "unsigned(kopt_block[2])), size_t(kopt_shared), kopt_stream>>>(" +
            args + ");\n";
  }
  body +=
      "  cudaError_t kopt_error = cudaGetLastError();\n"
      "  return kopt_error == cudaSuccess ? nullptr : cudaGetErrorString(kopt_error);\n}\n";
  std::string params;
  for (const auto& t : p.tensors)
    params += (params.empty() ? "" : ", ") + std::string(t.role == Role::input ? "const " : "") +
              c_type(t.dtype) + "* " + t.name;
  for (const auto& d : p.dims) params += (params.empty() ? "" : ", ") + ("int64_t " + d.name);
  params += std::string(params.empty() ? "" : ", ") + "cudaStream_t kopt_stream";
  std::string head = fmt::format(
      "\n// ---- kopt export: the launch of {} (kernel \"{}\"{}) as kopt.toml says it ----\n"
      "// Returns nullptr, or why the kernel cannot run at these dims.\n",
      k.entry, k.name, point.empty() ? "" : " at " + point_to_string(point));
  head += "static const char* " + function + "(" + params + ") {\n";
  if (sm_count)
    head +=
        "  int kopt_device = 0, kopt_sm_count = 0;\n  cudaGetDevice(&kopt_device);\n"
        "  cudaDeviceGetAttribute(&kopt_sm_count, cudaDevAttrMultiProcessorCount, "
        "kopt_device);\n";
  std::string includes =
      "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
      "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstdlib>\n"
      "#include <limits>\n\n";
  return includes + expr_code_helpers(CodeLanguage::cpp) + "\n" + param_defines(point) + "\n" +
         source + (source.empty() || source.back() == '\n' ? "" : "\n") + head + body;
}

Expected<TorchBinding> torch_binding(const Problem& p, const std::string& function,
                                     const std::string& binding) {
  std::vector<const TensorSpec*> reads = read_tensors(p);
  std::string params, body;
  for (const TensorSpec* t : reads)
    params += (params.empty() ? "" : ", ") + ("torch::Tensor " + t->name);
  for (const TensorSpec* t : reads) {
    std::string shape;
    for (const auto& e : t->shape) shape += (shape.empty() ? "" : ", ") + e.text();
    body += fmt::format(
        "  TORCH_CHECK({0}.is_cuda(), \"{0}: expected a CUDA tensor\");\n"
        "  TORCH_CHECK({0}.scalar_type() == {1}, \"{0}: expected {2} (kopt.toml), got \", "
        "{0}.scalar_type());\n"
        "  TORCH_CHECK({0}.dim() == {3}, \"{0}: expected {3} dims [{4}], got \", {0}.dim());\n"
        "  {0} = {0}.contiguous();\n",
        t->name, torch_cpp_dtype(t->dtype), dtype_name(t->dtype), t->shape.size(), shape);
  }
  std::set<std::pair<std::string, std::size_t>> derived;  // (tensor, axis) a dim is read from
  for (const DimSource& d : dim_sources(p)) {
    derived.emplace(d.tensor, d.axis);
    if (d.tensor.empty())
      body += fmt::format("  const int64_t {} = {};  // no input's extent: fixed by kopt export\n",
                          d.dim, d.value);
    else
      body += fmt::format("  const int64_t {} = {}.size({});\n", d.dim, d.tensor, d.axis);
  }
  bool no_sm = false;
  ParamPoint none;
  CppNames names{p, none, &no_sm};
  for (const TensorSpec* t : reads)
    for (std::size_t i = 0; i < t->shape.size(); ++i) {
      auto code = expr_code(t->shape[i], CodeLanguage::cpp, names);
      if (!code)
        return Unexpected(
            refusal(p, t->where,
                    "no C++ for its extent '" + t->shape[i].text() + "': " + code.error().message));
      if (derived.count({t->name, i})) continue;
      body += fmt::format(
          "  TORCH_CHECK({0}.size({1}) == {2}, \"{0}: extent {1} is \", {0}.size({1}), \", "
          "kopt.toml says {3} = \", {2});\n",
          t->name, i, *code, t->shape[i].text());
    }
  body += reads.empty()
              ? ""
              : "  const c10::cuda::CUDAGuard kopt_guard(" + reads[0]->name + ".device());\n";
  std::vector<std::string> results;
  for (const auto& t : p.tensors) {
    if (t.role == Role::input) continue;
    std::string name = t.role == Role::inout ? "kopt_" + t.name : t.name;
    results.push_back(name);
    if (t.role == Role::inout) {
      body += fmt::format("  torch::Tensor {} = {}.clone();\n", name, t.name);
      continue;
    }
    std::string shape;
    for (const auto& e : t.shape) {
      auto code = expr_code(e, CodeLanguage::cpp, names);
      if (!code)
        return Unexpected(refusal(
            p, t.where, "no C++ for its extent '" + e.text() + "': " + code.error().message));
      shape += (shape.empty() ? "" : ", ") + *code;
    }
    body += fmt::format(
        "  torch::Tensor {} = torch::empty({{{}}}, torch::dtype({}).device(torch::kCUDA));\n", name,
        shape, torch_cpp_dtype(t.dtype));
  }
  std::string call;
  for (const auto& t : p.tensors) {
    std::string name = t.role == Role::inout ? "kopt_" + t.name : t.name;
    call += (call.empty() ? "" : ", ") + fmt::format("({}{}*){}.data_ptr()",
                                                     t.role == Role::input ? "const " : "",
                                                     c_type(t.dtype), name);
  }
  for (const auto& d : p.dims) call += (call.empty() ? "" : ", ") + d.name;
  call += std::string(call.empty() ? "" : ", ") + "at::cuda::getCurrentCUDAStream()";
  body += "  const char* kopt_error = " + function + "(" + call + ");\n";
  body += "  TORCH_CHECK(kopt_error == nullptr, \"kopt export: \", kopt_error);\n";
  std::string ret;
  for (const auto& r : results) ret += (ret.empty() ? "" : ", ") + r;
  body += "  return {" + ret + "};\n}\n";
  TorchBinding b;
  b.declaration = "std::vector<torch::Tensor> " + binding + "(" + params + ");";
  b.code = "\n// ---- kopt export: the torch binding: dims from the tensors' extents ----\n" +
           b.declaration.substr(0, b.declaration.size() - 1) + " {\n" + body;
  return b;
}

std::vector<std::string> cuda_build_flags(const ExportContext& c, const KernelSpec& k) {
  std::vector<std::string> flags = k.compile_options;
  std::string arch = !k.arch.empty() ? k.arch : c.arch;
  if (!arch.empty() && arch.rfind("sm_", 0) == 0) {
    std::string n = arch.substr(3);
    flags.push_back("-gencode=arch=compute_" + n + ",code=sm_" + n);
  }
  return flags;
}

}  // namespace kopt::detail
