#include "kopt/analysis/target.hpp"

#include <algorithm>

namespace kopt {

std::string default_precision(const Problem& p) {
  for (const auto& t : p.tensors)
    if (t.role == Role::output || t.role == Role::inout) {
      switch (t.dtype) {
        case DType::f64:
          return "fp64";
        case DType::f16:
          return "fp16";
        case DType::bf16:
          return "bf16";
        default:
          return "fp32";
      }
    }
  return "fp32";
}

Expected<Target> compute_target(const Problem& p, const std::string& precision, const GpuSpec* spec,
                                const std::string& device, const std::vector<Ceiling>* ceilings,
                                const std::string& measured_at) {
  if (!p.cost)
    return Unexpected(
        bad_input("the problem has no [cost] formulas: a target needs its FLOPs and bytes",
                  p.spec_path.string(), 0, "cost"));
  Target t;
  t.problem = p.name;
  t.device = device;
  t.precision = precision;
  t.spec = spec;
  if (p.cost->flops.empty())
    return Unexpected(
        bad_input("the problem's [cost] has no flops formula: a target needs its FLOPs",
                  p.spec_path.string(), 0, "cost.flops"));
  Scope dims = p.dim_scope();
  auto f = p.cost->flops.evaluate(dims);
  if (!f) return Unexpected(f.error());
  auto b = p.cost->bytes.evaluate(dims);
  if (!b) return Unexpected(b.error());
  t.flops = as_double(*f);
  t.bytes = as_double(*b);
  t.intensity = t.bytes > 0 ? t.flops / t.bytes : 0;
  t.roofs = choose_roofs(precision, spec, ceilings, measured_at);
  if (t.roofs.compute && t.roofs.memory) {
    t.ridge = t.roofs.compute->rate / t.roofs.memory->rate;
    t.bound = t.intensity < t.ridge ? "memory" : "compute";
    t.floor_s = std::max(t.flops / t.roofs.compute->rate, t.bytes / t.roofs.memory->rate);
  } else if (t.roofs.memory) {
    t.floor_s = t.bytes / t.roofs.memory->rate;
  } else if (t.roofs.compute) {
    t.floor_s = t.flops / t.roofs.compute->rate;
  }
  t.target_s = t.floor_s / k_target_fraction;
  return t;
}

nlohmann::json to_json(const Target& t) {
  return {{"schema_version", 1},
          {"command", "target"},
          {"problem", t.problem},
          {"device", t.device},
          {"spec", t.spec ? t.spec->id : ""},
          {"precision", t.precision},
          {"compute_roof", to_json(t.roofs.compute)},
          {"memory_roof", to_json(t.roofs.memory)},
          {"notes", t.roofs.notes},
          {"flops", t.flops},
          {"bytes", t.bytes},
          {"intensity", t.intensity},
          {"ridge", t.ridge},
          {"bound", t.bound},
          {"floor_s", t.floor_s},
          {"target_s", t.target_s},
          {"target_fraction", k_target_fraction}};
}

}  // namespace kopt
