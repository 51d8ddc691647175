#include "kopt/problem/kernelbench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "kopt/core/hash.hpp"

namespace kopt {
using nlohmann::json;

namespace {

// The number of arithmetic operations each element of an operator's basis costs, as the
// roofline counts them (a transcendental function counts as one).
enum class Basis { result, first_arg };
struct OpRule {
  std::string_view name;
  int flops_per_element;
  Basis basis;
  std::string_view family;
};
constexpr OpRule k_element_rules[] = {
    {"relu", 1, Basis::result, "elementwise"},        {"relu6", 2, Basis::result, "elementwise"},
    {"leaky_relu", 2, Basis::result, "elementwise"},  {"elu", 3, Basis::result, "elementwise"},
    {"selu", 4, Basis::result, "elementwise"},        {"celu", 3, Basis::result, "elementwise"},
    {"gelu", 8, Basis::result, "elementwise"},        {"sigmoid", 3, Basis::result, "elementwise"},
    {"tanh", 1, Basis::result, "elementwise"},        {"silu", 4, Basis::result, "elementwise"},
    {"mish", 6, Basis::result, "elementwise"},        {"softplus", 3, Basis::result, "elementwise"},
    {"softsign", 3, Basis::result, "elementwise"},    {"hardtanh", 2, Basis::result, "elementwise"},
    {"hardsigmoid", 3, Basis::result, "elementwise"}, {"hardswish", 4, Basis::result, "elementwise"},
    {"abs", 1, Basis::result, "elementwise"},         {"exp", 1, Basis::result, "elementwise"},
    {"log", 1, Basis::result, "elementwise"},         {"sqrt", 1, Basis::result, "elementwise"},
    {"rsqrt", 1, Basis::result, "elementwise"},       {"neg", 1, Basis::result, "elementwise"},
    {"clamp", 2, Basis::result, "elementwise"},       {"clip", 2, Basis::result, "elementwise"},
    {"sign", 1, Basis::result, "elementwise"},        {"sin", 1, Basis::result, "elementwise"},
    {"cos", 1, Basis::result, "elementwise"},         {"erf", 1, Basis::result, "elementwise"},
    {"reciprocal", 1, Basis::result, "elementwise"},  {"square", 1, Basis::result, "elementwise"},
    {"add", 1, Basis::result, "elementwise"},         {"radd", 1, Basis::result, "elementwise"},
    {"sub", 1, Basis::result, "elementwise"},         {"rsub", 1, Basis::result, "elementwise"},
    {"mul", 1, Basis::result, "elementwise"},         {"rmul", 1, Basis::result, "elementwise"},
    {"div", 1, Basis::result, "elementwise"},         {"truediv", 1, Basis::result, "elementwise"},
    {"rtruediv", 1, Basis::result, "elementwise"},    {"pow", 1, Basis::result, "elementwise"},
    {"maximum", 1, Basis::result, "elementwise"},     {"minimum", 1, Basis::result, "elementwise"},
    {"where", 1, Basis::result, "elementwise"},       {"sum", 1, Basis::first_arg, "reduction"},
    {"mean", 1, Basis::first_arg, "reduction"},       {"max", 1, Basis::first_arg, "reduction"},
    {"min", 1, Basis::first_arg, "reduction"},        {"amax", 1, Basis::first_arg, "reduction"},
    {"amin", 1, Basis::first_arg, "reduction"},       {"argmax", 1, Basis::first_arg, "reduction"},
    {"argmin", 1, Basis::first_arg, "reduction"},     {"prod", 1, Basis::first_arg, "reduction"},
    {"norm", 2, Basis::first_arg, "reduction"},       {"cumsum", 1, Basis::first_arg, "scan"},
    {"cumprod", 1, Basis::first_arg, "scan"},         {"var", 3, Basis::first_arg, "reduction"},
    {"std", 3, Basis::first_arg, "reduction"},        {"logsumexp", 4, Basis::first_arg, "reduction"},
    {"softmax", 5, Basis::first_arg, "softmax"},      {"log_softmax", 5, Basis::first_arg, "softmax"},
    {"layer_norm", 8, Basis::first_arg, "normalization"}, {"group_norm", 8, Basis::first_arg, "normalization"},
    {"batch_norm", 8, Basis::first_arg, "normalization"}, {"instance_norm", 8, Basis::first_arg, "normalization"},
    {"rms_norm", 5, Basis::first_arg, "normalization"},   {"mse_loss", 3, Basis::first_arg, "loss"},
    {"l1_loss", 3, Basis::first_arg, "loss"},         {"smooth_l1_loss", 4, Basis::first_arg, "loss"},
    {"huber_loss", 4, Basis::first_arg, "loss"},      {"adaptive_avg_pool1d", 1, Basis::first_arg, "pooling"},
    {"adaptive_avg_pool2d", 1, Basis::first_arg, "pooling"}, {"adaptive_avg_pool3d", 1, Basis::first_arg, "pooling"},
};
constexpr std::string_view k_family_priority[] = {"gemm",    "convolution", "normalization", "softmax", "reduction",
                                                  "scan",    "pooling",     "loss",          "elementwise"};

struct Shape {
  std::vector<std::int64_t> dims;
};
Shape shape_of(const json& j) { return Shape{j.get<std::vector<std::int64_t>>()}; }

int dtype_bytes(const std::string& d) {
  if (d == "f64" || d == "i64") return 8;
  if (d == "f32" || d == "i32") return 4;
  if (d == "f16" || d == "bf16" || d == "i16") return 2;
  return 1;
}

// Readable numbers for inits: four significant digits.
std::string number(double v) {
  std::string s = fmt::format("{:.4g}", v);
  if (s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos) s += ".0";
  return s;
}

// Names the extents of shapes after the file's size constants (M, K, batch_size, ...).
class ShapeNamer {
 public:
  ShapeNamer(const json& globals, const std::set<std::string>& tensor_names) {
    for (const auto& g : globals) {
      std::string name = g.at("name");
      if (tensor_names.count(name) || is_expr_builtin(name)) name += "_dim";
      m_globals.push_back({name, g.at("value").get<std::int64_t>()});
    }
  }

  // One axis of a problem tensor. Several constants with this value: the first one not yet
  // used by this tensor (so a square A[N, N] is [N, N] and an A[M, K] with M == K is too).
  std::string axis(const std::string& tensor, std::size_t index, std::int64_t v, std::set<std::string>& in_tensor) {
    if (v == 1) return "1";
    std::vector<std::string> candidates;
    for (const auto& [n, value] : m_globals)
      if (value == v) candidates.push_back(n);
    std::string chosen;
    if (!candidates.empty()) {
      auto free = std::find_if(candidates.begin(), candidates.end(), [&](const auto& c) { return !in_tensor.count(c); });
      chosen = free != candidates.end() ? *free : candidates.front();
      if (candidates.size() > 1 && !m_ambiguous.count(v)) {
        m_ambiguous.insert(v);
        std::string all;
        for (const auto& c : candidates) all += (all.empty() ? "" : ", ") + c;
        notes.push_back(fmt::format("extent {} matches several size constants ({}); kopt used them in order, so "
                                    "check which one each axis means before changing one with --dim",
                                    v, all));
      }
    } else if (auto g = m_generated.find(v); g != m_generated.end()) {
      chosen = g->second;
    } else {
      chosen = fmt::format("{}_d{}", tensor, index);
      m_generated[v] = chosen;
      notes.push_back(fmt::format("extent {} of {} (axis {}) is no size constant of the file: it became the dim {}",
                                  v, tensor, index, chosen));
    }
    in_tensor.insert(chosen);
    use(chosen, v);
    return chosen;
  }

  // An extent of an intermediate: a dim where one has this value, else the number.
  std::string value(std::int64_t v) {
    if (v == 1) return "1";
    for (const auto& [n, value] : m_used)
      if (value == v) return n;
    for (const auto& [n, value] : m_globals)
      if (value == v) {
        use(n, v);
        return n;
      }
    return std::to_string(v);
  }

  // A problem tensor's shape, so that an operator on it names its axes as the tensor does.
  void remember(const Shape& s, const std::vector<std::string>& axes) { m_known.emplace(s.dims, axes); }

  std::string numel(const Shape& s) {
    if (auto k = m_known.find(s.dims); k != m_known.end()) return product(k->second);
    std::vector<std::string> axes;
    for (auto v : s.dims) axes.push_back(value(v));
    return product(axes);
  }

  static std::string product(const std::vector<std::string>& axes) {
    std::string out;
    for (const auto& e : axes)
      if (e != "1") out += (out.empty() ? "" : " * ") + e;
    return out.empty() ? "1" : out;
  }

  const std::vector<std::pair<std::string, std::int64_t>>& used() const { return m_used; }
  std::vector<std::string> notes;

 private:
  static bool is_expr_builtin(const std::string& n) {
    for (const char* b : {"min", "max", "abs", "ceil_div", "pow", "log2", "sqrt", "sm_count"})
      if (n == b) return true;
    return false;
  }
  void use(const std::string& n, std::int64_t v) {
    if (std::none_of(m_used.begin(), m_used.end(), [&](const auto& u) { return u.first == n; }))
      m_used.emplace_back(n, v);
  }
  std::vector<std::pair<std::string, std::int64_t>> m_globals;
  std::vector<std::pair<std::string, std::int64_t>> m_used;  // in first-use order
  std::map<std::int64_t, std::string> m_generated;
  std::map<std::vector<std::int64_t>, std::vector<std::string>> m_known;
  std::set<std::int64_t> m_ambiguous;
};

struct TensorOut {
  std::string name;
  std::string dtype;
  std::vector<std::string> shape;
  std::string role;
  std::string init;     // TOML inline table, empty for outputs
  std::string comment;  // where it came from
};

// An init like get_inputs()' own draws: integers as a randint over the seen range, constant
// tensors as constants, a flat spread (nn.init's uniform) as uniform, non-negative data as a
// uniform over its bulk, the rest as a normal with the seen mean and spread.
std::string init_from_stats(const json& st, const std::string& dtype) {
  if (st.empty()) return "";
  double lo = st.at("min"), hi = st.at("max"), mean = st.at("mean"), sd = st.at("std");
  if (dtype[0] == 'i' || dtype[0] == 'u')
    return fmt::format("{{ kind = \"randint\", low = {}, high = {} }}", static_cast<std::int64_t>(lo),
                       static_cast<std::int64_t>(hi) + 1);
  if (sd == 0) return fmt::format("{{ kind = \"constant\", value = {} }}", number(mean));
  if ((hi - lo) / sd < 4.0)
    return fmt::format("{{ kind = \"uniform\", low = {}, high = {} }}", number(lo), number(hi));
  if (lo >= 0) {
    double top = std::min(hi, mean + 4 * sd);
    return fmt::format("{{ kind = \"uniform\", low = {}, high = {} }}", number(lo), number(top > lo ? top : hi));
  }
  return fmt::format("{{ kind = \"normal\", mean = {}, std = {} }}", number(mean), number(sd));
}

std::string stats_comment(const json& st) {
  if (st.empty()) return "";
  return fmt::format("min {}, max {}, mean {}, std {}", number(st.at("min")), number(st.at("max")),
                     number(st.at("mean")), number(st.at("std")));
}

std::string unique_name(std::string n, std::set<std::string>& taken) {
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) n = "t_" + n;
  std::string out = n;
  for (int i = 2; taken.count(out); ++i) out = n + "_" + std::to_string(i);
  taken.insert(out);
  return out;
}

std::string python_string(const std::string& s) { return json(s).dump(); }

struct CostOut {
  std::optional<std::string> flops;
  std::string family;
  std::vector<std::string> unknown_ops;
};

CostOut derive_cost(const json& ops, ShapeNamer& namer) {
  CostOut c;
  std::vector<std::string> terms;
  std::set<std::string_view> families;
  for (const auto& op : ops) {
    std::string name = op.at("name");
    const json& args = op.at("args");
    Shape result = op.at("result").empty() ? Shape{} : shape_of(op.at("result"));
    auto arg = [&](std::size_t i) { return shape_of(args.at(i)); };
    auto tail_numel = [&](const Shape& w) {
      Shape t{std::vector<std::int64_t>(w.dims.begin() + 1, w.dims.end())};
      return namer.numel(t);
    };
    if (name == "matmul" || name == "mm" || name == "bmm" || name == "linear" || name == "addmm" ||
        name == "baddbmm" || name == "addbmm" || name == "rmatmul") {
      std::size_t a = name == "addmm" || name == "baddbmm" || name == "addbmm" ? 1 : 0;
      if (args.size() > a && !arg(a).dims.empty()) {
        terms.push_back("2 * " + namer.numel(result) + " * " + namer.value(arg(a).dims.back()));
        families.insert("gemm");
        continue;
      }
    } else if (name.rfind("conv_transpose", 0) == 0 && args.size() >= 2) {
      terms.push_back("2 * " + namer.numel(arg(0)) + " * " + tail_numel(arg(1)));
      families.insert("convolution");
      continue;
    } else if (name.rfind("conv", 0) == 0 && args.size() >= 2) {
      terms.push_back("2 * " + namer.numel(result) + " * " + tail_numel(arg(1)));
      families.insert("convolution");
      continue;
    } else if ((name.find("max_pool") != std::string::npos || name.find("avg_pool") != std::string::npos) &&
               op.contains("kernel_size") && name.rfind("adaptive", 0) != 0) {
      std::int64_t window = 1;
      for (auto k : op.at("kernel_size")) window *= k.get<std::int64_t>();
      // A single kernel size covers every spatial axis: max_pool1d, avg_pool3d, max_pool2d_with_indices.
      std::size_t digit = name.find("pool") + 4;
      int spatial = digit < name.size() && name[digit] >= '1' && name[digit] <= '3' ? name[digit] - '0' : 2;
      if (op.at("kernel_size").size() == 1) window = static_cast<std::int64_t>(std::pow(window, spatial));
      terms.push_back(std::to_string(window) + " * " + namer.numel(result));
      families.insert("pooling");
      continue;
    }
    std::string bare = name.size() > 1 && name.back() == '_' ? name.substr(0, name.size() - 1) : name;
    auto rule = std::find_if(std::begin(k_element_rules), std::end(k_element_rules),
                             [&](const OpRule& r) { return r.name == bare; });
    if (rule == std::end(k_element_rules) || (rule->basis == Basis::first_arg && args.empty())) {
      if (std::find(c.unknown_ops.begin(), c.unknown_ops.end(), name) == c.unknown_ops.end())
        c.unknown_ops.push_back(name);
      continue;
    }
    std::string basis = namer.numel(rule->basis == Basis::result ? result : arg(0));
    terms.push_back(rule->flops_per_element == 1 ? basis : std::to_string(rule->flops_per_element) + " * " + basis);
    families.insert(rule->family);
  }
  for (auto f : k_family_priority)
    if (families.count(f)) {
      c.family = f;
      break;
    }
  if (c.unknown_ops.empty() && !terms.empty()) {
    std::string sum;
    for (const auto& t : terms) sum += (sum.empty() ? "" : " + ") + t;
    c.flops = sum;
  }
  return c;
}

}  // namespace

Expected<ImportedProblem> problem_from_kernelbench(const json& facts, const std::string& file_name) {
  if (facts.contains("error")) return Unexpected(bad_input(facts.at("error").get<std::string>(), file_name));
  ImportedProblem out;
  std::string stem = std::filesystem::path(file_name).stem().string();
  out.name = stem;
  try {
    std::set<std::string> taken;
    std::vector<std::pair<std::string, std::string>> forward;  // ("tensor", name) or ("constant", repr)
    std::vector<TensorOut> tensors;
    std::vector<std::pair<std::string, std::string>> parameters;  // model name -> tensor name
    for (const auto& in : facts.at("inputs"))
      if (in.at("tensor")) taken.insert(in.at("name").get<std::string>());
    ShapeNamer namer(facts.at("globals"), taken);
    taken.clear();
    // `weight`: one of the model's parameters or buffers (loaded into it before each call).
    auto add = [&](const std::string& wanted, const json& t, const std::string& role, const std::string& origin,
                   bool weight = false) -> Expected<std::string> {
      std::string dtype = t.at("dtype");
      if (dtype == "bool")
        return Unexpected(bad_input("the " + origin + " '" + wanted + "' is a bool tensor, which kopt has no dtype for",
                                    file_name, 0, wanted));
      static const std::set<std::string> known = {"f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8"};
      if (!known.count(dtype))
        return Unexpected(bad_input("the " + origin + " '" + wanted + "' has dtype " + dtype + ", which kopt has not",
                                    file_name, 0, wanted));
      TensorOut o;
      o.name = unique_name(wanted, taken);
      o.dtype = dtype;
      o.role = role;
      std::set<std::string> in_tensor;
      Shape s = shape_of(t.at("shape"));
      if (s.dims.empty()) s.dims.push_back(1);  // a 0-d result (a loss) is one element
      for (std::size_t i = 0; i < s.dims.size(); ++i) o.shape.push_back(namer.axis(o.name, i, s.dims[i], in_tensor));
      namer.remember(s, o.shape);
      const json stats = t.value("stats", json::object());
      if (weight && !stats.empty() && stats.at("std") == 0 && dtype[0] != 'i' && dtype[0] != 'u') {
        // nn's constant inits (a norm's weight 1, bias 0): kopt draws around that value, so
        // that a kernel that ignores the tensor fails its check.
        o.init = fmt::format("{{ kind = \"normal\", mean = {}, std = 0.1 }}", number(stats.at("mean")));
        o.comment = origin + "; the model sets it to " + number(stats.at("mean")) +
                    ", kopt draws around that so that a kernel must use it";
      } else if (role == "input") {
        o.init = init_from_stats(stats, dtype);
        std::string st = stats_comment(stats);
        o.comment = origin + (st.empty() ? "" : "; it drew " + st);
      } else {
        o.comment = origin;
      }
      tensors.push_back(o);
      return o.name;
    };
    for (const auto& in : facts.at("inputs")) {
      if (!in.at("tensor")) {
        forward.emplace_back("constant", in.at("value").get<std::string>());
        out.notes.push_back("forward's argument " + in.at("name").get<std::string>() + " is the constant " +
                            in.at("value").get<std::string>() + " from get_inputs(); ref.py passes it as it is");
        continue;
      }
      auto n = add(in.at("name"), in, "input", "get_inputs(): forward's argument " + in.at("name").get<std::string>());
      if (!n) return Unexpected(n.error());
      forward.emplace_back("tensor", *n);
    }
    for (const auto& p : facts.at("parameters")) {
      std::string model_name = p.at("name");
      auto n = add(model_name, p, "input", "the model's " + p.at("kind").get<std::string>() + " " + model_name, true);
      if (!n) return Unexpected(n.error());
      parameters.emplace_back(model_name, *n);
    }
    std::vector<std::string> outputs;
    const json& outs = facts.at("outputs");
    for (std::size_t i = 0; i < outs.size(); ++i) {
      auto n = add(outs.size() == 1 ? "out" : "out" + std::to_string(i), outs[i], "output",
                   outs.size() == 1 ? "forward's result" : fmt::format("forward's result {}", i));
      if (!n) return Unexpected(n.error());
      outputs.push_back(*n);
    }
    if (outputs.empty()) return Unexpected(bad_input("Model.forward returned no tensor", file_name));

    CostOut cost = derive_cost(facts.at("ops"), namer);
    // bytes: every tensor once, equal extents counted ("2 * n * 4" rather than "n * 4 + n * 4").
    std::map<int, std::vector<std::pair<std::string, int>>> by_size;
    for (const auto& t : tensors) {
      auto& terms = by_size[dtype_bytes(t.dtype)];
      std::string numel = ShapeNamer::product(t.shape);
      auto same = std::find_if(terms.begin(), terms.end(), [&](auto& x) { return x.first == numel; });
      if (same != terms.end()) ++same->second;
      else terms.emplace_back(numel, 1);
    }
    std::string bytes;
    for (const auto& [size, terms] : by_size) {
      std::string sum;
      for (const auto& [numel, count] : terms)
        sum += (sum.empty() ? "" : " + ") + (count > 1 ? std::to_string(count) + " * " : "") + numel;
      bool several = terms.size() > 1;
      bytes += (bytes.empty() ? "" : " + ") + (several ? "(" + sum + ")" : sum) + " * " + std::to_string(size);
    }
    if (!cost.unknown_ops.empty()) {
      std::string ops;
      for (const auto& o : cost.unknown_ops) ops += (ops.empty() ? "" : ", ") + o;
      out.notes.push_back("flops not derived: kopt has no formula for " + ops + "; write [cost] flops by hand");
    }
    out.notes.insert(out.notes.end(), namer.notes.begin(), namer.notes.end());

    // kopt.toml
    std::string t;
    t += fmt::format("# The KernelBench problem {}, imported by `kopt import kernelbench` (torch {}).\n", file_name,
                     facts.value("torch", std::string("?")));
    t += "# model.py is the file as it came; ref.py runs its Model on kopt's inputs. Extents are named\n";
    t += "# after the file's size constants by value: check them before changing a dim with --dim.\n";
    for (const auto& n : out.notes) t += "# NOTE: " + n + "\n";
    t += fmt::format("name = {}\n", python_string(stem));
    t += fmt::format("family = {}\n", python_string(cost.family.empty() ? stem : cost.family));
    t += fmt::format("description = {}\n\n", python_string("KernelBench " + stem));
    t += "[dims]\n";
    for (const auto& [n, v] : namer.used()) t += fmt::format("{} = {}\n", n, v);
    for (const auto& ts : tensors) {
      t += "\n# " + ts.comment + "\n[[tensors]]\n";
      t += fmt::format("name = {}\ndtype = \"{}\"\nshape = [", python_string(ts.name), ts.dtype);
      for (std::size_t i = 0; i < ts.shape.size(); ++i) t += (i ? ", " : "") + python_string(ts.shape[i]);
      t += fmt::format("]\nrole = \"{}\"\n", ts.role);
      if (!ts.init.empty()) t += "init = " + ts.init + "\n";
    }
    t += "\n[cost]\n";
    if (cost.flops)
      t += fmt::format("flops = {}\n", python_string(*cost.flops));
    else
      t += "# flops = \"...\"  (not derived: see the NOTE above)\n";
    t += fmt::format("bytes = {}  # every tensor read or written once\n", python_string(bytes));
    t += "\n[reference]\nkind = \"python\"\nsource = \"ref.py\"\n";
    const TensorOut& first_out = *std::find_if(tensors.begin(), tensors.end(), [](auto& x) { return x.role == "output"; });
    std::string arg_list;
    for (const auto& ts : tensors) arg_list += (arg_list.empty() ? "" : ", ") + python_string(ts.name);
    std::string n_out = ShapeNamer::product(first_out.shape);
    t += "\n# Kernels go here. A CUDA kernel, for example (args: tensor names, then expressions):\n";
    t += "# [[kernels]]\n# name = \"cuda\"\n# source = \"kernel.cu\"\n# entry = \"my_kernel\"\n";
    t += fmt::format("# args = [{}, \"{}\"]\n", arg_list, n_out);
    t += fmt::format("# grid = [\"ceil_div({}, BLOCK)\"]\n# block = [\"BLOCK\"]\n", n_out);
    t += "# [kernels.params]\n# BLOCK = [256, 128, 512]\n";
    t += "# A Triton kernel: source = \"kernel_triton.py\", entry = \"run_kernel\", called as\n";
    t += "# run_kernel(**tensors, **dims, **params); no args, grid or block.\n";
    out.kopt_toml = std::move(t);

    // ref.py
    Sha256 h;
    h.field(file_name);
    std::string r;
    r += fmt::format("# The PyTorch reference of the KernelBench problem {} (model.py, as it came), written by\n",
                     file_name);
    r += "# `kopt import kernelbench`. kopt calls reference(**tensors, **dims) with its own inputs and\n";
    r += "# checks kernels against what it writes; `kopt bench --vs-torch` times setup_baseline()'s\n";
    r += "# model on the same inputs, eager and through torch.compile, as KernelBench times it.\n";
    r += "import importlib.util\nimport os\nimport sys\n\nimport torch\n\n";
    r += "# KernelBench's own correctness check: torch.allclose(output, reference, atol=1e-02, rtol=1e-02).\n";
    r += "atol = 1e-02\nrtol = 1e-02\n\n";
    r += "FORWARD = [  # Model.forward's arguments, in order: kopt tensors, or get_inputs()' constants\n";
    for (const auto& [kind, v] : forward) r += fmt::format("    ({}, {}),\n", python_string(kind), kind == "tensor" ? python_string(v) : v);
    r += "]\nPARAMETERS = {  # the model's parameters and buffers, loaded from these kopt tensors\n";
    for (const auto& [m, k] : parameters) r += fmt::format("    {}: {},\n", python_string(m), python_string(k));
    r += "}\nOUTPUTS = [";
    for (std::size_t i = 0; i < outputs.size(); ++i) r += (i ? ", " : "") + python_string(outputs[i]);
    r += "]\n\n";
    r += fmt::format(
        "_spec = importlib.util.spec_from_file_location(\n"
        "    \"kopt_kernelbench_{}\", os.path.join(os.path.dirname(os.path.abspath(__file__)), \"model.py\"))\n",
        h.hex().substr(0, 12));
    // Registered in sys.modules, as importlib's recipe does: torch.compile (dynamo) looks
    // modules up by name when it traces into them.
    r += "_kb = importlib.util.module_from_spec(_spec)\nsys.modules[_spec.name] = _kb\n_spec.loader.exec_module(_kb)\n"
         "_models = {}\n\n\n";
    r += "def _bound(kw):\n"
         "    \"\"\"The model on the outputs' device, its weights those of kw, and forward's arguments.\"\"\"\n"
         "    device = kw[OUTPUTS[0]].device\n"
         "    if device not in _models:\n"
         "        torch.manual_seed(0)\n"
         "        _models[device] = [_kb.Model(*_kb.get_init_inputs()).to(device), None]\n"
         "    entry = _models[device]\n"
         "    source = tuple((id(kw[t]), kw[t].data_ptr()) for t in PARAMETERS.values())\n"
         "    if PARAMETERS and entry[1] != source:\n"
         "        state = dict(entry[0].named_parameters())\n"
         "        state.update(dict(entry[0].named_buffers()))\n"
         "        with torch.no_grad():\n"
         "            for name, tensor in PARAMETERS.items():\n"
         "                state[name].copy_(kw[tensor])\n"
         "        entry[1] = source\n"
         "    return entry[0], [kw[v] if k == \"tensor\" else v for k, v in FORWARD]\n\n\n";
    r += "def setup_baseline(**kw):\n    return _bound(kw)\n\n\n";
    r += "def reference(**kw):\n"
         "    model, args = _bound(kw)\n"
         "    with torch.no_grad():\n"
         "        result = model(*args)\n"
         "    results = result if isinstance(result, (tuple, list)) else [result]\n"
         "    for name, value in zip(OUTPUTS, results):\n"
         "        kw[name].copy_(value.reshape(kw[name].shape))\n";
    out.ref_py = std::move(r);
  } catch (const json::exception& e) {
    return Unexpected(internal_error(std::string("the KernelBench import script's facts are malformed: ") + e.what()));
  }
  return out;
}

}  // namespace kopt
