// The small pieces `kopt export` writes with (export_parts.hpp): where dims come from, C and
// torch names of dtypes, literals, Python code of shapes and the KernelBench record of ref.py.
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "export_parts.hpp"
#include "expr_node.hpp"
#include "kopt/problem/expr_code.hpp"

namespace kopt::detail {

std::vector<DimSource> dim_sources(const Problem& p) {
  std::vector<DimSource> out;
  for (const auto& d : p.dims) {
    DimSource s{d.name, "", 0, d.value};
    for (const TensorSpec* t : read_tensors(p)) {
      for (std::size_t i = 0; i < t->shape.size() && s.tensor.empty(); ++i) {
        const ExprNode* n = t->shape[i].root();
        if (n && n->kind == ExprNode::Kind::name && n->text == d.name) {
          s.tensor = t->name;
          s.axis = i;
        }
      }
      if (!s.tensor.empty()) break;
    }
    out.push_back(s);
  }
  return out;
}

std::vector<const TensorSpec*> read_tensors(const Problem& p) {
  std::vector<const TensorSpec*> out;
  for (const auto& t : p.tensors)
    if (t.role != Role::output) out.push_back(&t);
  return out;
}

std::vector<const TensorSpec*> result_tensors(const Problem& p) {
  std::vector<const TensorSpec*> out;
  for (const auto& t : p.tensors)
    if (t.role != Role::input) out.push_back(&t);
  return out;
}

std::string c_type(DType t) {
  switch (t) {
    case DType::f64:
      return "double";
    case DType::f32:
      return "float";
    case DType::f16:
      return "__half";
    case DType::bf16:
      return "__nv_bfloat16";
    case DType::i64:
      return "int64_t";
    case DType::i32:
      return "int32_t";
    case DType::i16:
      return "int16_t";
    case DType::i8:
      return "int8_t";
    case DType::u8:
      return "uint8_t";
  }
  return "float";
}

std::string torch_cpp_dtype(DType t) {
  switch (t) {
    case DType::f64:
      return "torch::kDouble";
    case DType::f32:
      return "torch::kFloat";
    case DType::f16:
      return "torch::kHalf";
    case DType::bf16:
      return "torch::kBFloat16";
    case DType::i64:
      return "torch::kLong";
    case DType::i32:
      return "torch::kInt";
    case DType::i16:
      return "torch::kShort";
    case DType::i8:
      return "torch::kChar";
    case DType::u8:
      return "torch::kByte";
  }
  return "torch::kFloat";
}

std::string torch_py_dtype(DType t) {
  switch (t) {
    case DType::f64:
      return "torch.float64";
    case DType::f32:
      return "torch.float32";
    case DType::f16:
      return "torch.float16";
    case DType::bf16:
      return "torch.bfloat16";
    case DType::i64:
      return "torch.int64";
    case DType::i32:
      return "torch.int32";
    case DType::i16:
      return "torch.int16";
    case DType::i8:
      return "torch.int8";
    case DType::u8:
      return "torch.uint8";
  }
  return "torch.float32";
}

Error refusal(const Problem& p, const SourceRef& where, std::string why) {
  return bad_input(std::move(why), p.spec_path.string(), where.line, where.field);
}

std::string cpp_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string python_string(const std::string& s) {
  return nlohmann::json(s).dump();
}

std::string python_text(const std::string& text) {
  bool raw = text.find("\"\"\"") == std::string::npos &&
             (text.empty() || (text.back() != '\\' && text.back() != '"'));
  if (raw) return "r\"\"\"" + text + "\"\"\"";
  std::string out = "\"\"\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"\"\"";
}

std::string dims_flag(const Problem& p) {
  std::string s;
  for (const auto& d : p.dims) s += (s.empty() ? "" : ",") + d.name + "=" + std::to_string(d.value);
  return s.empty() ? "" : "--dims " + s;
}

std::string param_defines(const ParamPoint& point) {
  std::string out;
  for (const auto& [name, value] : point)
    out += "#ifndef " + name + "\n#define " + name + " " + std::to_string(value) + "\n#endif\n";
  return out;
}

Expected<std::string> python_code(const Problem& p, const Expr& e, const SourceRef& where,
                                  const ParamPoint& point) {
  auto spelled = [&](const std::string& name) -> Expected<std::string> {
    if (auto it = point.find(name); it != point.end()) return std::to_string(it->second);
    for (const auto& d : p.dims)
      if (d.name == name) return name;
    return Unexpected(
        refusal(p, where, "'" + name + "' in '" + e.text() + "' is no dim or param of the point"));
  };
  auto code = expr_code(e, CodeLanguage::python, spelled);
  if (!code)
    return Unexpected(
        refusal(p, where, "no Python for '" + e.text() + "': " + code.error().message));
  return code;
}

Expected<KernelBenchRecord> read_kernelbench_record(const Problem& p, const std::string& ref_py) {
  std::string file = (p.dir / p.reference.kernel.source).string();
  auto block = [&](const std::string& name, char open, char close) -> std::optional<std::string> {
    std::smatch m;
    std::regex head("(^|\\n)" + name + " = \\" + std::string(1, open));
    if (!std::regex_search(ref_py, m, head)) return std::nullopt;
    std::size_t start = static_cast<std::size_t>(m.position(0) + m.length(0));
    std::size_t end = ref_py.find(std::string("\n") + close, start);
    if (end == std::string::npos) end = ref_py.find(close, start);
    if (end == std::string::npos) return std::nullopt;
    return ref_py.substr(start, end - start);
  };
  auto forward = block("FORWARD", '[', ']');
  auto parameters = block("PARAMETERS", '{', '}');
  auto outputs = block("OUTPUTS", '[', ']');
  if (!forward || !parameters || !outputs)
    return Unexpected(bad_input(
        "has model.py beside it but no FORWARD, PARAMETERS and OUTPUTS (what `kopt import "
        "kernelbench` writes): import the problem again to export it as a ModelNew",
        file, 0, "FORWARD"));
  KernelBenchRecord r;
  static const std::regex k_entry("\\(\\s*\"(tensor|constant)\"\\s*,\\s*(\"([^\"]*)\"|[^)]*)\\)");
  for (std::sregex_iterator it(forward->begin(), forward->end(), k_entry), e; it != e; ++it)
    r.forward.emplace_back((*it)[1], (*it)[1] == "tensor" ? (*it)[3].str() : (*it)[2].str());
  static const std::regex k_pair("\"([^\"]*)\"\\s*:\\s*\"([^\"]*)\"");
  for (std::sregex_iterator it(parameters->begin(), parameters->end(), k_pair), e; it != e; ++it)
    r.parameters.emplace_back((*it)[1], (*it)[2]);
  static const std::regex k_name("\"([^\"]*)\"");
  for (std::sregex_iterator it(outputs->begin(), outputs->end(), k_name), e; it != e; ++it)
    r.outputs.push_back((*it)[1]);
  auto known = [&](const std::string& name, const char* where, bool output) -> Expected<void> {
    const TensorSpec* t = p.find_tensor(name);
    if (!t || (t->role == Role::output) != output)
      return Unexpected(bad_input(std::string(where) + " names '" + name + "', which is no " +
                                      (output ? "output" : "input") + " tensor of kopt.toml",
                                  file, 0, where));
    return {};
  };
  for (const auto& [kind, v] : r.forward)
    if (kind == "tensor")
      if (auto k = known(v, "FORWARD", false); !k) return Unexpected(k.error());
  for (const auto& [m, t] : r.parameters)
    if (auto k = known(t, "PARAMETERS", false); !k) return Unexpected(k.error());
  for (const auto& o : r.outputs)
    if (auto k = known(o, "OUTPUTS", true); !k) return Unexpected(k.error());
  if (r.outputs.empty())
    return Unexpected(bad_input("OUTPUTS names no tensor", file, 0, "OUTPUTS"));
  return r;
}

std::optional<double> python_number(const std::string& text, const std::string& name) {
  std::regex line("(^|\\n)" + name + "\\s*=\\s*([-+0-9.eE]+)\\s*(#[^\\n]*)?(\\n|$)");
  std::smatch m;
  if (!std::regex_search(text, m, line)) return std::nullopt;
  try {
    return std::stod(m[2]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace kopt::detail
