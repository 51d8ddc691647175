#include "kopt/problem/problem.hpp"

namespace kopt {

std::string_view role_name(Role r) {
  switch (r) {
    case Role::input:
      return "input";
    case Role::output:
      return "output";
    case Role::inout:
      return "inout";
  }
  return "?";
}

std::string_view init_kind_name(InitKind k) {
  switch (k) {
    case InitKind::normal:
      return "normal";
    case InitKind::uniform:
      return "uniform";
    case InitKind::randint:
      return "randint";
    case InitKind::arange:
      return "arange";
    case InitKind::constant:
      return "constant";
  }
  return "?";
}

std::optional<InitKind> parse_init_kind(std::string_view name) {
  for (InitKind k : {InitKind::normal, InitKind::uniform, InitKind::randint, InitKind::arange,
                     InitKind::constant})
    if (init_kind_name(k) == name) return k;
  return std::nullopt;
}

Tolerance default_tolerance(DType t) {
  switch (t) {
    case DType::f64:
      return {1e-10, 1e-8};
    case DType::f32:
      return {1e-5, 1e-5};
    case DType::f16:
      return {1e-3, 1e-3};
    case DType::bf16:
      return {1e-2, 1.6e-2};
    default:
      return {0.0, 0.0};
  }
}

const ParamSpec* KernelSpec::find_param(std::string_view param) const {
  for (const auto& p : params)
    if (p.name == param) return &p;
  return nullptr;
}

const MethodToggle* KernelSpec::find_method(std::string_view method) const {
  for (const auto& m : methods)
    if (m.method == method) return &m;
  return nullptr;
}

const TensorSpec* Problem::find_tensor(std::string_view tensor) const {
  for (const auto& t : tensors)
    if (t.name == tensor) return &t;
  return nullptr;
}

std::string_view reference_kind_name(ReferenceKind k) {
  switch (k) {
    case ReferenceKind::cuda:
      return "cuda";
    case ReferenceKind::cpp:
      return "cpp";
    case ReferenceKind::python:
      return "python";
  }
  return "?";
}

const KernelSpec* Problem::find_kernel(std::string_view kernel) const {
  for (const auto& k : kernels)
    if (k.name == kernel) return &k;
  return nullptr;
}

Tolerance Problem::tolerance_for(const TensorSpec& t) const {
  if (t.tolerance) return *t.tolerance;
  if (auto it = tolerances.find(t.dtype); it != tolerances.end()) return it->second;
  return default_tolerance(t.dtype);
}

Scope Problem::dim_scope() const {
  Scope s;
  for (const auto& d : dims) s[d.name] = d.value;
  return s;
}

Cost Problem::cost_at_dims() const {
  Cost c;
  if (!cost) return c;
  Scope s = dim_scope();
  if (auto f = cost->flops.evaluate(s)) c.flops = as_double(*f);
  if (auto b = cost->bytes.evaluate(s)) c.bytes = as_double(*b);
  return c;
}

bool Problem::has_half_data() const {
  for (const auto& t : tensors)
    if (t.dtype == DType::f16 || t.dtype == DType::bf16) return true;
  return false;
}

}  // namespace kopt
