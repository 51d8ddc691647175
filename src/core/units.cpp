#include "kopt/core/units.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace kopt {

std::string human_rate(double v, const std::string& unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[i], unit);
}

std::string human_time(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

std::string human_bytes(std::uint64_t b) {
  if (b >= (std::uint64_t{1} << 30))
    return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1 << 30));
  return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
}

std::optional<std::uint64_t> env_gib(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  double gib = std::strtod(text, &end);
  if (end == text || !(gib >= 0)) return std::nullopt;
  return static_cast<std::uint64_t>(gib * static_cast<double>(std::uint64_t{1} << 30));
}

}  // namespace kopt
