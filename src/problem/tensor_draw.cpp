// The element draw is draw_element.inc's, compiled here for the host with -ffp-contract=off
// (CMakeLists.txt): a multiply and an add stay two roundings, as they are in the Python twin
// (one torch operation each) and in the device's draw (intrinsics that round once).
#include "kopt/problem/tensor_draw.hpp"

#include <span>

#include "draw_element_host.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/problem/dtype.hpp"

namespace kopt {

extern const char* const k_draw_element_source;  // draw_element.inc, embedded

static_assert(static_cast<int>(InitKind::normal) == KOPT_DRAW_NORMAL &&
              static_cast<int>(InitKind::uniform) == KOPT_DRAW_UNIFORM &&
              static_cast<int>(InitKind::randint) == KOPT_DRAW_RANDINT &&
              static_cast<int>(InitKind::arange) == KOPT_DRAW_ARANGE &&
              static_cast<int>(InitKind::constant) == KOPT_DRAW_CONSTANT);

DrawRecipe draw_recipe(const TensorSpec& spec, std::uint64_t seed) {
  return {spec.init.kind, spec.init.a, spec.init.b,
          draw_element::kopt_mix64(seed ^ checksum64(std::as_bytes(std::span(spec.name)))),
          spec.dtype};
}

double draw_value(const DrawRecipe& r, std::uint64_t i) {
  return draw_element::kopt_draw_value(static_cast<int>(r.kind), r.a, r.b, r.key, i);
}

bool mix_takes(std::uint64_t mix, std::uint64_t i) {
  return draw_element::kopt_mix_takes(mix, i);
}

void draw_values(const DrawRecipe& r, std::byte* data, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) store_from_double(data, i, r.dtype, draw_value(r, i));
}

const char* draw_element_source() {
  return k_draw_element_source;
}

std::string draw_token(const DrawRecipe& r) {
  return "drawn-" + hex64(r.key);
}

}  // namespace kopt
