#include "kopt/problem/kernelbench_shape_namer.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kopt {

namespace {
bool is_expr_builtin(const std::string& n) {
  for (const char* b : {"min", "max", "abs", "ceil_div", "pow", "log2", "sqrt", "sm_count"})
    if (n == b) return true;
  return false;
}
}  // namespace

ShapeNamer::ShapeNamer(const nlohmann::json& globals, const std::set<std::string>& tensor_names) {
  for (const auto& g : globals) {
    std::string name = g.at("name");
    if (tensor_names.count(name) || is_expr_builtin(name)) name += "_dim";
    m_globals.push_back({name, g.at("value").get<std::int64_t>()});
  }
}

std::string ShapeNamer::axis(const std::string& tensor, std::size_t index, std::int64_t v,
                             std::set<std::string>& in_tensor) {
  if (v == 1) return "1";
  std::vector<std::string> candidates;
  for (const auto& [n, value] : m_globals)
    if (value == v) candidates.push_back(n);
  std::string chosen;
  if (!candidates.empty()) {
    auto free = std::find_if(candidates.begin(), candidates.end(),
                             [&](const auto& c) { return !in_tensor.count(c); });
    chosen = free != candidates.end() ? *free : candidates.front();
    if (candidates.size() > 1 && !m_ambiguous.count(v)) {
      m_ambiguous.insert(v);
      std::string all;
      for (const auto& c : candidates) all += (all.empty() ? "" : ", ") + c;
      notes.push_back(
          fmt::format("extent {} matches several size constants ({}); kopt used them in order, so "
                      "check which one each axis means before changing one with --dim",
                      v, all));
    }
  } else if (auto g = m_generated.find(v); g != m_generated.end()) {
    chosen = g->second;
  } else {
    chosen = fmt::format("{}_d{}", tensor, index);
    m_generated[v] = chosen;
    notes.push_back(fmt::format(
        "extent {} of {} (axis {}) is no size constant of the file: it became the dim {}", v,
        tensor, index, chosen));
  }
  in_tensor.insert(chosen);
  use(chosen, v);
  return chosen;
}

std::string ShapeNamer::value(std::int64_t v) {
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

std::vector<std::string> ShapeNamer::axes(const Extents& s) {
  if (auto k = m_known.find(s); k != m_known.end()) return k->second;
  std::vector<std::string> out;
  for (auto v : s) out.push_back(value(v));
  return out;
}

std::string ShapeNamer::product(const std::vector<std::string>& axes) {
  std::string out;
  for (const auto& e : axes)
    if (e != "1") out += (out.empty() ? "" : " * ") + e;
  return out.empty() ? "1" : out;
}

void ShapeNamer::use(const std::string& n, std::int64_t v) {
  if (std::none_of(m_used.begin(), m_used.end(), [&](const auto& u) { return u.first == n; }))
    m_used.emplace_back(n, v);
}

}  // namespace kopt
