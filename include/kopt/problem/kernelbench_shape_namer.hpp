#pragma once
// Names the extents of a KernelBench problem's shapes after the file's own size constants
// (M, K, batch_size, ...), so that kopt.toml's shapes and cost formulas read like the file and
// follow a --dim. An extent that is no constant becomes a dim of its own, with a note.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kopt {

using Extents = std::vector<std::int64_t>;

class ShapeNamer {
 public:
  // `globals`: the import script's [{name, value}] of module-level integers, in source order;
  // `tensor_names`: names a dim must not take (a constant named like a tensor gets "_dim").
  ShapeNamer(const nlohmann::json& globals, const std::set<std::string>& tensor_names);

  // One axis of a problem tensor. Several constants with this value: the first one not yet
  // used by this tensor (so a square A[N, N] is [N, N] and an A[M, K] with M == K is too).
  std::string axis(const std::string& tensor, std::size_t index, std::int64_t v,
                   std::set<std::string>& in_tensor);

  // An extent of an intermediate: a dim where one has this value, else the number.
  std::string value(std::int64_t v);

  // A problem tensor's shape, so that an operator on it names its axes as the tensor does.
  void remember(const Extents& s, const std::vector<std::string>& axes) {
    m_known.emplace(s, axes);
  }

  // The names of a shape's axes: a problem tensor's own, else each extent's value().
  std::vector<std::string> axes(const Extents& s);

  // The element count of a shape, as a product of dims ("1" for a scalar).
  std::string numel(const Extents& s) { return product(axes(s)); }

  static std::string product(const std::vector<std::string>& axes);

  // The dims named so far, with their values, in first-use order.
  const std::vector<std::pair<std::string, std::int64_t>>& used() const { return m_used; }
  std::vector<std::string> notes;

 private:
  void use(const std::string& n, std::int64_t v);
  std::vector<std::pair<std::string, std::int64_t>> m_globals;
  std::vector<std::pair<std::string, std::int64_t>> m_used;  // in first-use order
  std::map<std::int64_t, std::string> m_generated;
  std::map<Extents, std::vector<std::string>> m_known;
  std::set<std::int64_t> m_ambiguous;
};

}  // namespace kopt
