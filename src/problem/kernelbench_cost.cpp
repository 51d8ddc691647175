#include "kopt/problem/kernelbench_cost.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "kernelbench_element_cost.hpp"

namespace kopt {
using nlohmann::json;

namespace {

// One recorded call: its name (an in-place call's trailing '_' dropped), its tensor arguments'
// shapes, its result's shape, and the whole record for the facts a formula needs.
struct Call {
  std::string name;
  std::vector<Extents> args;
  Extents result;
  const json& facts;
};

// A call's cost: an expression, "" for a call that does no arithmetic, none when kopt cannot
// say from the recorded facts.
using Cost = std::optional<std::string>;
const Cost k_free = std::string();
constexpr std::string_view k_ew = "elementwise";

std::string mul(const std::string& a, const std::string& b) {
  if (a == "1") return b;
  if (b == "1") return a;
  return a + " * " + b;
}
std::string times(std::int64_t k, const std::string& e) {
  return k == 1 ? e : mul(std::to_string(k), e);
}
// A shape's element count without its first or last axis, and one axis (from the end when
// negative), named as the namer names a problem tensor's axes.
std::string numel_but_first(const Extents& s, ShapeNamer& n) {
  auto axes = n.axes(s);
  return ShapeNamer::product(axes.empty() ? axes
                                          : std::vector<std::string>(axes.begin() + 1, axes.end()));
}
std::string numel_but_last(const Extents& s, ShapeNamer& n) {
  auto axes = n.axes(s);
  return ShapeNamer::product(axes.empty() ? axes
                                          : std::vector<std::string>(axes.begin(), axes.end() - 1));
}
std::string axis(const Extents& s, int i, ShapeNamer& n) {
  return n.axes(s).at(i < 0 ? s.size() - static_cast<std::size_t>(-i)
                            : static_cast<std::size_t>(i));
}

// ---- Formulas that need more than an element count.

// matmul, mm, bmm, mv, dot: a multiply-add per result element and step of A's last axis K:
// 2 * numel(C) * K.
Cost product(const Call& c, ShapeNamer& n) {
  if (c.args.size() < 2 || c.args[0].empty()) return std::nullopt;
  return "2 * " + mul(n.numel(c.result), axis(c.args[0], -1, n));
}

// __rmatmul__ (A @ B called on B): as matmul, with K B's second-last axis (its only one when 1-D).
Cost right_product(const Call& c, ShapeNamer& n) {
  if (c.args.empty() || c.args[0].empty()) return std::nullopt;
  const Extents& b = c.args[0];
  return "2 * " + mul(n.numel(c.result), axis(b, b.size() >= 2 ? -2 : 0, n));
}

// linear(x, W[, b]): 2 * numel(y) * K multiply-adds, and the bias add: numel(y).
Cost linear(const Call& c, ShapeNamer& n) {
  auto f = product(c, n);
  if (f && c.args.size() >= 3) *f += " + " + n.numel(c.result);
  return f;
}

// addmm, baddbmm, addbmm, addmv (input + A @ B): 2 * numel(y) * K, and the add: numel(y).
Cost product_plus_input(const Call& c, ShapeNamer& n) {
  if (c.args.size() < 3 || c.args[1].empty()) return std::nullopt;
  std::string out = n.numel(c.result);
  return "2 * " + mul(out, axis(c.args[1], -1, n)) + " + " + out;
}

// outer: one multiply per result element.
Cost outer(const Call& c, ShapeNamer& n) {
  return n.numel(c.result);
}

// einsum: at every point of the equation's index space, a multiply per operand past the first,
// and an add where some index is summed: 2 * (the product of all extents) for a contraction.
Cost einsum(const Call& c, ShapeNamer& n) {
  if (!c.facts.contains("equation")) return std::nullopt;
  std::string eq;
  for (char ch : c.facts.at("equation").get<std::string>())
    if (ch != ' ') eq += ch;
  if (eq.find("...") != std::string::npos) return std::nullopt;  // broadcast axes: not worked out
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> operands(1);
  for (char ch : lhs) {
    if (ch == ',')
      operands.emplace_back();
    else
      operands.back().push_back(ch);
  }
  if (operands.size() != c.args.size()) return std::nullopt;
  std::string order;  // indices in first-seen order
  std::map<char, std::int64_t> extent;
  std::map<char, std::string> named;  // as the operand's axis is named
  std::map<char, int> seen;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].size() != c.args[i].size()) return std::nullopt;
    auto axes = n.axes(c.args[i]);
    for (std::size_t j = 0; j < operands[i].size(); ++j) {
      char ch = operands[i][j];
      if (!seen[ch]++) order += ch;
      if (c.args[i][j] > extent[ch]) {  // not a broadcast axis of 1
        extent[ch] = c.args[i][j];
        named[ch] = axes[j];
      }
    }
  }
  std::string out;
  if (arrow != std::string::npos)
    out = eq.substr(arrow + 2);
  else
    for (auto [ch, count] : seen)
      if (count == 1) out += ch;
  bool summed = std::any_of(order.begin(), order.end(),
                            [&](char ch) { return out.find(ch) == std::string::npos; });
  std::int64_t per_point = static_cast<std::int64_t>(operands.size()) - 1 + (summed ? 1 : 0);
  if (per_point == 0) return k_free;  // a transpose or copy
  std::vector<std::string> axes;
  for (char ch : order) axes.push_back(named[ch]);
  return times(per_point, ShapeNamer::product(axes));
}

// conv{1,2,3}d (weight [Cout, Cin / groups, k...]): a multiply-add per result element and weight
// element of its group, 2 * numel(y) * Cin / groups * prod(k), and the bias add: numel(y).
Cost convolution(const Call& c, ShapeNamer& n) {
  if (c.args.size() < 2 || c.args[1].size() < 2) return std::nullopt;
  std::string out = n.numel(c.result);
  std::string f = "2 * " + mul(out, numel_but_first(c.args[1], n));
  if (c.args.size() >= 3) f += " + " + out;
  return f;
}

// conv_transpose{1,2,3}d (weight [Cin, Cout / groups, k...]): every input element a multiply-add
// into Cout / groups * prod(k) results, 2 * numel(x) * Cout / groups * prod(k) (stride, padding
// and dilation only place them), and the bias add: numel(y).
Cost transposed_convolution(const Call& c, ShapeNamer& n) {
  if (c.args.size() < 2 || c.args[1].size() < 2) return std::nullopt;
  std::string f = "2 * " + mul(n.numel(c.args[0]), numel_but_first(c.args[1], n));
  if (c.args.size() >= 3) f += " + " + n.numel(c.result);
  return f;
}

// max_pool, avg_pool {1,2,3}d: one operation per window element and result element; a window
// given as one size spans each of the pool's spatial axes.
Cost pool(const Call& c, ShapeNamer& n) {
  if (!c.facts.contains("kernel_size")) return std::nullopt;
  std::int64_t window = 1;
  const json& ks = c.facts.at("kernel_size");
  for (const auto& k : ks) window *= k.get<std::int64_t>();
  std::size_t digit = c.name.find("pool") + 4;
  int spatial = digit < c.name.size() && c.name[digit] >= '1' && c.name[digit] <= '3'
                    ? c.name[digit] - '0'
                    : 2;
  if (ks.size() == 1) window = static_cast<std::int64_t>(std::pow(window, spatial));
  return times(window, n.numel(c.result));
}

// scaled_dot_product_attention(q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv][, mask]): Q K^T and
// P V are 2 * Lq * Lk * (D + Dv) multiply-adds per batch and head (4 * B * H * Lq * Lk * D when
// Dv = D); per score the scale 1 and softmax 5, and 1 more for a mask. Causal: counted dense.
Cost attention(const Call& c, ShapeNamer& n) {
  if (c.args.size() < 3) return std::nullopt;
  const Extents &q = c.args[0], &k = c.args[1], &v = c.args[2];
  if (q.size() < 2 || k.size() < 2 || v.empty()) return std::nullopt;
  std::string scores = mul(numel_but_last(q, n), axis(k, -2, n));
  std::string products =
      q.back() == v.back()
          ? "4 * " + mul(scores, axis(q, -1, n))
          : "2 * " + mul(scores, "(" + axis(q, -1, n) + " + " + axis(v, -1, n) + ")");
  return products + " + " + times(c.args.size() >= 4 ? 7 : 6, scores);
}

// dropout in training with p > 0: a multiply by the scaled keep-mask per element (drawing the
// mask is no arithmetic); alpha_dropout a multiply-add. In eval, or with p = 0: nothing.
Cost dropout(const Call& c, ShapeNamer& n) {
  if (c.facts.value("training", true) == false || c.facts.value("p", 0.5) == 0.0) return k_free;
  return times(c.name.find("alpha") != std::string::npos ? 2 : 1, n.numel(c.result));
}

// The number of rows of x: every axis but the last (a distance's or similarity's dim).
std::string rows(const Extents& x, ShapeNamer& n) {
  return numel_but_last(x, n);
}

// pairwise_distance(x1, x2), p = 2: x1 - x2 + eps, square-add (4 per element), a sqrt per row.
Cost pairwise_distance(const Call& c, ShapeNamer& n) {
  if (c.args.empty()) return std::nullopt;
  return "4 * " + n.numel(c.args[0]) + " + " + rows(c.args[0], n);
}

// triplet_margin_loss(a, p, n), p = 2: two pairwise distances (4 per element each), per row
// their 2 sqrts, d(a, p) - d(a, n) + margin, the clamp and the mean's add: 8 * numel(a) + 6 * rows.
Cost triplet_margin_loss(const Call& c, ShapeNamer& n) {
  if (c.args.empty()) return std::nullopt;
  return "8 * " + n.numel(c.args[0]) + " + " + times(6, rows(c.args[0], n));
}

// cosine_similarity(x1, x2): the dot and two squared norms (6 per element); per result the
// product of norms, sqrt, eps clamp and divide (4).
Cost cosine_similarity(const Call& c, ShapeNamer& n) {
  if (c.args.empty()) return std::nullopt;
  return "6 * " + n.numel(c.args[0]) + " + " + times(4, n.numel(c.result));
}

// cosine_embedding_loss(x1, x2, y): the cosine per row (6 per element, 4 per row), then 1 - cos or
// clamp(cos - margin), the select on y and the mean's add (4 per row): 6 * numel + 8 * rows.
Cost cosine_embedding_loss(const Call& c, ShapeNamer& n) {
  if (c.args.empty()) return std::nullopt;
  return "6 * " + n.numel(c.args[0]) + " + " + times(8, rows(c.args[0], n));
}

// cross_entropy(x [N, C, ...], target): log_softmax over x (5 per element), then -log p of the
// target summed: 2 per target element (a class index, or a probability multiplied in).
Cost cross_entropy(const Call& c, ShapeNamer& n) {
  if (c.args.size() < 2) return std::nullopt;
  return "5 * " + n.numel(c.args[0]) + " + " + times(2, n.numel(c.args[1]));
}

// nll_loss(x, target): the target's -x summed: 2 per target element.
Cost nll_loss(const Call& c, ShapeNamer& n) {
  if (c.args.size() < 2) return std::nullopt;
  return times(2, n.numel(c.args[1]));
}

using Formula = Cost (*)(const Call&, ShapeNamer&);
struct FormulaRule {
  std::string_view name;
  Formula formula;
  std::string_view family;
};
// clang-format off: a table
constexpr FormulaRule k_formula_rules[] = {
    {"matmul", product, "gemm"},
    {"mm", product, "gemm"},
    {"bmm", product, "gemm"},
    {"mv", product, "gemm"},
    {"dot", product, "gemm"},
    {"vdot", product, "gemm"},
    {"inner", product, "gemm"},
    {"rmatmul", right_product, "gemm"},
    {"linear", linear, "gemm"},
    {"addmm", product_plus_input, "gemm"},
    {"baddbmm", product_plus_input, "gemm"},
    {"addbmm", product_plus_input, "gemm"},
    {"addmv", product_plus_input, "gemm"},
    {"outer", outer, "gemm"},
    {"ger", outer, "gemm"},
    {"einsum", einsum, "gemm"},
    {"conv1d", convolution, "convolution"},
    {"conv2d", convolution, "convolution"},
    {"conv3d", convolution, "convolution"},
    {"conv_transpose1d", transposed_convolution, "convolution"},
    {"conv_transpose2d", transposed_convolution, "convolution"},
    {"conv_transpose3d", transposed_convolution, "convolution"},
    {"max_pool1d", pool, "pooling"},
    {"max_pool2d", pool, "pooling"},
    {"max_pool3d", pool, "pooling"},
    {"max_pool1d_with_indices", pool, "pooling"},
    {"max_pool2d_with_indices", pool, "pooling"},
    {"max_pool3d_with_indices", pool, "pooling"},
    {"avg_pool1d", pool, "pooling"},
    {"avg_pool2d", pool, "pooling"},
    {"avg_pool3d", pool, "pooling"},
    {"scaled_dot_product_attention", attention, "attention"},
    {"dropout", dropout, k_ew},
    {"dropout1d", dropout, k_ew},
    {"dropout2d", dropout, k_ew},
    {"dropout3d", dropout, k_ew},
    {"alpha_dropout", dropout, k_ew},
    {"feature_alpha_dropout", dropout, k_ew},
    {"pairwise_distance", pairwise_distance, "loss"},
    {"triplet_margin_loss", triplet_margin_loss, "loss"},
    {"cosine_similarity", cosine_similarity, "loss"},
    {"cosine_embedding_loss", cosine_embedding_loss, "loss"},
    {"cross_entropy", cross_entropy, "loss"},
    {"nll_loss", nll_loss, "loss"},
};
// clang-format on

constexpr std::string_view k_family_priority[] = {
    "attention", "gemm", "convolution", "normalization", "softmax",
    "reduction", "scan", "pooling",     "loss",          "elementwise"};

std::string bare(const std::string& name) {
  return name.size() > 1 && name.back() == '_' ? name.substr(0, name.size() - 1) : name;
}

// The cost of one call, and its family (empty for a free call).
Cost cost_of(const Call& c, ShapeNamer& n, std::string_view& family) {
  family = {};
  for (const auto& r : k_formula_rules)
    if (r.name == c.name) {
      Cost f = r.formula(c, n);
      if (f && !f->empty()) family = r.family;
      return f;
    }
  if (const detail::ElementCost* e = detail::element_cost(c.name)) {
    if (!e->per_result && c.args.empty()) return std::nullopt;
    family = e->family;
    return times(e->flops_per_element, n.numel(e->per_result ? c.result : c.args[0]));
  }
  if (detail::is_free_call(c.name)) return k_free;
  return std::nullopt;
}

}  // namespace

bool kernelbench_op_known(const std::string& name) {
  std::string b = bare(name);
  auto is = [&](const auto& r) { return r.name == b; };
  return std::any_of(std::begin(k_formula_rules), std::end(k_formula_rules), is) ||
         detail::element_cost(b) || detail::is_free_call(b);
}

Expected<KernelbenchCost> kernelbench_cost(const json& ops, ShapeNamer& namer) {
  KernelbenchCost out;
  try {
    std::vector<std::string> terms;
    std::set<std::string_view> families;
    for (const auto& op : ops) {
      std::string name = op.at("name");
      Call call{bare(name), {}, op.at("result").get<Extents>(), op};
      for (const auto& a : op.at("args")) call.args.push_back(a.get<Extents>());
      std::string_view family;
      Cost cost = cost_of(call, namer, family);
      if (!cost) {
        if (std::find(out.unknown_ops.begin(), out.unknown_ops.end(), name) ==
            out.unknown_ops.end())
          out.unknown_ops.push_back(name);
        continue;
      }
      if (!cost->empty()) terms.push_back(*cost);
      if (!family.empty()) families.insert(family);
    }
    for (auto f : k_family_priority)
      if (families.count(f)) {
        out.family = f;
        break;
      }
    if (out.unknown_ops.empty() && !ops.empty()) {
      std::string sum;
      for (const auto& t : terms) sum += (sum.empty() ? "" : " + ") + t;
      out.flops = sum.empty() ? "0" : sum;
    }
  } catch (const json::exception& e) {
    return Unexpected(internal_error(
        std::string("the KernelBench import script's ops are malformed: ") + e.what()));
  }
  return out;
}

}  // namespace kopt
