#pragma once
// draw_element.inc compiled for the host: plain IEEE operations (the files that include this
// are compiled with -ffp-contract=off, CMakeLists.txt), in namespace kopt::draw_element.
#include <bit>
#include <cmath>
#include <cstdint>

namespace kopt::draw_element {

using std::ceil;
using std::floor;
using std::frexp;
using std::rint;

#define KOPT_DRAW_FN inline
#define KOPT_DMUL(a, b) ((a) * (b))
#define KOPT_DADD(a, b) ((a) + (b))
#define KOPT_DSUB(a, b) ((a) - (b))
#define KOPT_DDIV(a, b) ((a) / (b))
#define KOPT_DSQRT(a) std::sqrt(a)
#define KOPT_F2U(f) std::bit_cast<std::uint32_t>(f)
#include "draw_element.inc"
#undef KOPT_DRAW_FN
#undef KOPT_DMUL
#undef KOPT_DADD
#undef KOPT_DSUB
#undef KOPT_DDIV
#undef KOPT_DSQRT
#undef KOPT_F2U

}  // namespace kopt::draw_element
