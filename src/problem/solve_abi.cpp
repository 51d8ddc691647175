#include "kopt/problem/solve_abi.hpp"

#include <algorithm>
#include <optional>
#include <regex>

#include "kopt/core/text.hpp"

namespace kopt {

namespace {

// The type's words without qualifiers: "const float* __restrict__" -> "float".
std::optional<DType> c_type_dtype(std::string base) {
  static const std::pair<const char*, DType> k_types[] = {
      {"float", DType::f32},
      {"double", DType::f64},
      {"__half", DType::f16},
      {"half", DType::f16},
      {"__nv_bfloat16", DType::bf16},
      {"nv_bfloat16", DType::bf16},
      {"int", DType::i32},
      {"int32_t", DType::i32},
      {"unsigned", DType::i32},
      {"unsigned int", DType::i32},
      {"uint32_t", DType::i32},
      {"long long", DType::i64},
      {"long", DType::i64},
      {"int64_t", DType::i64},
      {"size_t", DType::i64},
      {"unsigned long", DType::i64},
      {"uint64_t", DType::i64},
      {"short", DType::i16},
      {"int16_t", DType::i16},
      {"char", DType::i8},
      {"signed char", DType::i8},
      {"int8_t", DType::i8},
      {"unsigned char", DType::u8},
      {"uint8_t", DType::u8},
  };
  for (const auto& [name, dt] : k_types)
    if (base == name) return dt;
  return std::nullopt;
}

}  // namespace

namespace {
// void, or const char* (a message when it cannot run, nullptr when it ran).
const std::string k_solve_return =
    "(\\bvoid\\s+|\\bconst\\s+char\\s*\\*\\s*|\\bchar\\s+const\\s*\\*\\s*)";
}  // namespace

bool solve_returns_message(const std::string& source, const std::string& entry) {
  std::regex head("extern\\s+\"C\"[^;{(]*" + k_solve_return + entry + "\\s*\\(");
  std::smatch m;
  return std::regex_search(source, m, head) && m[1].str().find("char") != std::string::npos;
}

Expected<std::vector<SolveParam>> parse_parameter_list(const std::string& source, std::size_t open,
                                                       const std::string& entry,
                                                       const std::string& file) {
  std::size_t close = source.find(')', open);
  if (close == std::string::npos)
    return Unexpected(
        bad_input("the parameter list of " + entry + " does not end", file, 0, "entry"));
  auto line_at = [&](std::size_t pos) {
    return 1 + static_cast<int>(std::count(source.begin(), source.begin() + pos, '\n'));
  };
  std::vector<SolveParam> out;
  std::string list = source.substr(open, close - open);
  if (trim(list).empty() || trim(list) == "void") return out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string segment = list.substr(start, comma - start);
    std::string text = trim(segment);
    std::size_t lead = segment.find_first_not_of(" \t\r\n");
    int line = line_at(open + start + (lead == std::string::npos ? 0 : lead));
    // The name is the last identifier; the type is what comes before it.
    std::smatch nm;
    static const std::regex k_last_name("([A-Za-z_][A-Za-z_0-9]*)\\s*$");
    if (!std::regex_search(text, nm, k_last_name) || nm.position(0) == 0)
      return Unexpected(
          bad_input("parameter '" + text + "' of " + entry + " has no name", file, line, "entry"));
    SolveParam p;
    p.name = nm[1];
    p.type = trim(text.substr(0, static_cast<std::size_t>(nm.position(0))));
    p.line = line;
    p.pointer = std::count(p.type.begin(), p.type.end(), '*') == 1;
    if (std::count(p.type.begin(), p.type.end(), '*') > 1 ||
        p.type.find('&') != std::string::npos || p.type.find('[') != std::string::npos)
      return Unexpected(bad_input("parameter " + p.name + " of " + entry + " has type '" + p.type +
                                      "': kopt passes pointers to elements and scalars",
                                  file, line, p.name));
    std::string base = p.type.substr(0, p.type.find('*'));  // "float* const" is still writable data
    std::string words;
    static const std::regex k_word("[A-Za-z_][A-Za-z_0-9]*");
    for (std::sregex_iterator w(base.begin(), base.end(), k_word), e; w != e; ++w) {
      std::string word = w->str();
      // OpenCL's __constant address space is read-only data, as const is.
      if (word == "const" || word == "__constant" || word == "constant") {
        p.is_const = true;
        continue;
      }
      if (word == "volatile" || word == "__restrict__" || word == "restrict" ||
          word == "__restrict" || word == "std" || word == "__global" || word == "global" ||
          word == "__private" || word == "private")
        continue;
      words += (words.empty() ? "" : " ") + word;
    }
    auto dt = c_type_dtype(words);
    if (!dt)
      return Unexpected(bad_input("parameter " + p.name + " of " + entry + " has type '" + p.type +
                                      "', which kopt has no dtype for",
                                  file, line, p.name));
    p.dtype = *dt;
    if (!p.pointer) p.is_const = false;
    out.push_back(std::move(p));
    start = comma + 1;
  }
  return out;
}

Expected<std::vector<SolveParam>> parse_solve_signature(const std::string& source,
                                                        const std::string& entry,
                                                        const std::string& file) {
  // extern "C" [attributes] void|const char* ENTRY ( params ) — the first definition or
  // declaration.
  std::regex head("extern\\s+\"C\"[^;{(]*" + k_solve_return + entry + "\\s*\\(");
  std::smatch m;
  if (!std::regex_search(source, m, head))
    return Unexpected(bad_input("no extern \"C\" void (or const char*) " + entry +
                                    "(...) in the source (the solve() contract)",
                                file, 0, "entry"));
  return parse_parameter_list(source, static_cast<std::size_t>(m.position(0) + m.length(0)), entry,
                              file);
}

Expected<std::vector<KernelSignature>> parse_kernel_signatures(const std::string& source,
                                                               bool opencl,
                                                               const std::string& file) {
  // CUDA: [extern "C"] __global__ [__launch_bounds__(...)] void NAME(; OpenCL: __kernel (or
  // kernel) void NAME(. A template's kernels are left out (they have no one name to launch).
  static const std::regex k_cuda(
      "(template\\s*<[^>]*>\\s*)?(extern\\s+\"C\"\\s+)?__global__\\s+(__launch_bounds__\\s*\\([^)]*"
      "\\)\\s*)?void\\s+(__launch_bounds__\\s*\\([^)]*\\)\\s*)?([A-Za-z_][A-Za-z_0-9]*)\\s*\\(");
  static const std::regex k_cl(
      "\\b(__kernel|kernel)\\s+(__attribute__\\s*\\(\\([^;{]*\\)\\)\\s*)?"
      "void\\s+([A-Za-z_][A-Za-z_0-9]*)\\s*\\(");
  std::vector<KernelSignature> out;
  const std::regex& head = opencl ? k_cl : k_cuda;
  for (std::sregex_iterator it(source.begin(), source.end(), head), e; it != e; ++it) {
    const std::smatch& m = *it;
    if (!opencl && m[1].matched) continue;
    KernelSignature k;
    k.entry = m[opencl ? 3 : 5];
    k.line = 1 + static_cast<int>(std::count(source.begin(), source.begin() + m.position(0), '\n'));
    auto params = parse_parameter_list(
        source, static_cast<std::size_t>(m.position(0) + m.length(0)), k.entry, file);
    if (!params) return Unexpected(params.error());
    k.params = std::move(*params);
    if (std::none_of(out.begin(), out.end(), [&](const auto& o) { return o.entry == k.entry; }))
      out.push_back(std::move(k));
  }
  return out;
}

std::string solve_shim_source(const std::vector<SolveParam>& params, const std::string& entry,
                              bool returns_message) {
  std::string s =
      "\n// Added by kopt: the worker calls solve() through this, arguments packed as for\n"
      "// cuLaunchKernel (a[i] points at the i-th argument's value).\n"
      "#include <cuda_runtime.h>\n"
      "extern \"C\" const char* kopt_solve_shim(void** a) {\n  " +
      std::string(returns_message ? "const char* message = " : "") + entry + "(";
  for (std::size_t i = 0; i < params.size(); ++i) {
    // The declared type, restrict qualifiers aside (they mean nothing on a cast).
    std::string type =
        trim(std::regex_replace(params[i].type, std::regex("\\b(__restrict__|restrict)\\b"), ""));
    s += (i ? ", " : "") + std::string("*(") + type + "*)a[" + std::to_string(i) + "]";
  }
  s += ");\n";
  if (returns_message) s += "  if (message) return message;\n";
  s += "  cudaError_t e = cudaGetLastError();\n  return e == cudaSuccess ? nullptr : "
       "cudaGetErrorString(e);\n}\n";
  return s;
}

}  // namespace kopt
