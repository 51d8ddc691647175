#include "kopt/report/target_markdown.hpp"

#include <fmt/format.h>

#include "kopt/report/explanation_markdown.hpp"

namespace kopt {

std::string target_markdown(const Target& t) {
  auto roof = [](const std::optional<Roof>& r, const char* unit) {
    return r ? fmt::format("{} — {} ({})", human_rate(r->rate, unit), r->origin, r->source)
             : std::string("none");
  };
  std::string out =
      fmt::format("# Target: {} on {}\n\n", t.problem, t.device.empty() ? "?" : t.device);
  out += "## Roofs used\n\n";
  out += fmt::format("- compute ({}): {}\n", t.precision, roof(t.roofs.compute, "FLOP/s"));
  out += fmt::format("- memory: {}\n", roof(t.roofs.memory, "B/s"));
  for (const auto& n : t.roofs.notes) out += "- note: " + n + "\n";
  out += "\nMeasured ceilings (`kopt ceilings`) take precedence over the spec table.\n";
  if (t.spec) {
    out += fmt::format(
        "\n### Spec table entry: {} (`{}`)\n\n| field | value | source |\n|---|---:|---|\n",
        t.spec->name, t.spec->id);
    for (const char* f : {"memory_bandwidth_gbs", "fp32_tflops", "fp64_tflops", "tf32_tflops",
                          "fp16_tflops", "bf16_tflops", "fp8_tflops"}) {
      const SpecValue* v = t.spec->find(f);
      out += fmt::format("| {} | {} | {} |\n", f,
                         !v               ? "UNKNOWN"
                         : v->unsupported ? "unsupported"
                                          : fmt::format("{:g}", *v->value),
                         v ? t.spec->citation(f) : "no source");
    }
  }
  out += "\n## The problem (cost formulas at the spec's dims)\n\n";
  out += fmt::format("- FLOPs: {:.6g}\n- bytes: {:.6g}\n- arithmetic intensity: {:.3g} FLOP/byte\n",
                     t.flops, t.bytes, t.intensity);
  if (t.ridge > 0)
    out += fmt::format("- ridge point: {:.3g} FLOP/byte → **{}-bound**\n", t.ridge, t.bound);
  out += "\n## Stop conditions\n\n";
  if (t.floor_s > 0) {
    out += fmt::format("- roofline floor: {}\n", human_time(t.floor_s));
    out +=
        fmt::format("- target: time ≤ **{}** (the floor / {:.2f}, i.e. {:.0f} % of the {} roof)\n",
                    human_time(t.target_s), k_target_fraction, 100 * k_target_fraction,
                    t.bound.empty() ? "available" : t.bound);
  } else {
    out += "- no roof is known for this GPU: run `kopt ceilings` on it\n";
  }
  out += "- or: the profile reports near_peak (Δc, Δm and Δl all below 0.15)\n";
  return out;
}

}  // namespace kopt
