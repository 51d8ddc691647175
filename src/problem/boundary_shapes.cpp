#include "kopt/problem/boundary_shapes.hpp"

#include <algorithm>
#include <set>

#include "kopt/problem/tensor_data.hpp"
#include "kopt/problem/tensor_map.hpp"

namespace kopt {

std::string_view boundary_kind_name(BoundaryKind k) {
  return k == BoundaryKind::tails ? "tails" : "ones";
}

std::int64_t prime_at_most(std::int64_t n) {
  for (std::int64_t c = n; c > 2; --c) {
    bool prime = c % 2 != 0;
    for (std::int64_t d = 3; prime && d * d <= c; d += 2) prime = c % d != 0;
    if (prime) return c;
  }
  return 2;
}

namespace {

// The dims some tensor's shape names, in the problem's declaration order.
std::vector<std::string> size_dims(const Problem& p) {
  std::set<std::string> named;
  for (const auto& t : p.tensors)
    for (const auto& e : t.shape)
      for (const auto& n : e.names()) named.insert(n);
  std::vector<std::string> out;
  for (const auto& d : p.dims)
    if (named.count(d.name)) out.push_back(d.name);
  return out;
}

// TMA steps through a tensor it maps in multiples of 16 bytes: a shape whose rows are not
// (383 bf16 columns: 766 bytes) is one the kernel cannot be launched at, not a boundary it
// must handle, just as one its constraints refuse.
bool tensor_maps_stride(const Problem& p, const KernelSpec& k, const Scope& s) {
  for (const auto& a : k.args) {
    if (!a.tensor_map) continue;
    const TensorSpec* t = p.find_tensor(a.tensor);
    if (!t) continue;
    auto shape = tensor_shape(*t, s);
    if (!shape) return false;
    ResolvedTensorMap unit_box;
    unit_box.box.assign(shape->size(), 1);
    if (!tensor_map_layout(*shape, t->dtype, unit_box)) return false;
  }
  return true;
}

bool accepts(const Problem& p, const KernelSpec& k, const std::map<std::string, std::int64_t>& dims,
             const ParamPoint& point) {
  Scope s;
  for (const auto& [n, v] : dims) s[n] = v;
  auto bad = violated_constraint(k, s, point);
  return bad && *bad == nullptr && tensor_maps_stride(p, k, s);
}

// The value of one dim for `kind`: the first candidate the constraints accept, or none.
std::optional<std::int64_t> pick(BoundaryKind kind, std::int64_t declared, const Problem& p,
                                 const KernelSpec& k, std::map<std::string, std::int64_t> dims,
                                 const std::string& name, const ParamPoint& point) {
  std::int64_t target = declared > 32 ? declared / 2 : declared - 1;
  for (std::int64_t g = 1; g <= 256; g *= 2) {
    std::int64_t v = g;
    if (kind == BoundaryKind::tails) {
      if (target / g < 3) break;
      v = g * prime_at_most(target / g);
    }
    if (v >= declared) break;
    dims[name] = v;
    if (accepts(p, k, dims, point)) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string BoundaryShape::label() const {
  std::string out;
  for (const auto& n : moved)
    out += (out.empty() ? "" : " ") + n + "=" + std::to_string(dims.at(n));
  return out;
}

std::vector<BoundaryShape> boundary_shapes(const Problem& p, const KernelSpec& k,
                                           const ParamPoint& point) {
  std::map<std::string, std::int64_t> declared;
  for (const auto& d : p.dims) declared[d.name] = d.value;
  std::vector<std::string> vary, held;
  for (const auto& n : size_dims(p)) {
    bool kept_by_check = false;
    if (!p.check_dims.empty()) {
      auto it = p.check_dims.find(n);
      kept_by_check = it == p.check_dims.end() || it->second == declared.at(n);
    }
    if (kept_by_check)
      held.push_back(n);
    else if (declared.at(n) > 2)
      vary.push_back(n);
  }
  std::vector<BoundaryShape> out;
  for (BoundaryKind kind : {BoundaryKind::tails, BoundaryKind::ones}) {
    BoundaryShape s{kind, declared, {}, held};
    for (const auto& n : vary) {
      if (auto v = pick(kind, declared.at(n), p, k, s.dims, n, point)) {
        s.dims[n] = *v;
        s.moved.push_back(n);
      } else {
        s.held.push_back(n);
      }
    }
    if (s.moved.empty() || !accepts(p, k, s.dims, point)) continue;
    if (std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.dims == s.dims; }))
      continue;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kopt
