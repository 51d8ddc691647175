#include "kopt/problem/arch_target.hpp"

#include <cctype>

namespace kopt {
namespace {

struct ParsedArch {
  int number = 0;
  char suffix = 0;  // 0, 'a' or 'f'
};

std::optional<ParsedArch> parse_arch(std::string_view arch) {
  if (!arch.starts_with("sm_")) return std::nullopt;
  std::size_t i = 3;
  ParsedArch out;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) {
    if (out.number > 100000) return std::nullopt;
    out.number = out.number * 10 + (arch[i++] - '0');
  }
  if (i == 3) return std::nullopt;
  if (i < arch.size() && (arch[i] == 'a' || arch[i] == 'f')) out.suffix = arch[i++];
  if (i != arch.size()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<int> arch_number(std::string_view arch) {
  auto a = parse_arch(arch);
  if (!a) return std::nullopt;
  return a->number;
}

bool is_arch_target(std::string_view arch) {
  return parse_arch(arch).has_value();
}

bool arch_runs_on(std::string_view target, std::string_view device_arch) {
  auto t = parse_arch(target);
  auto d = parse_arch(device_arch);
  if (!t || !d) return false;
  // A family target runs on later minor versions of its major one (sm_100f on sm_103).
  if (t->suffix == 'f') return d->number / 10 == t->number / 10 && d->number >= t->number;
  return d->number == t->number;
}

BuildTarget build_target(const Problem& problem, const KernelSpec& kernel,
                         const std::string& device_arch) {
  bool cuda = language_of(kernel.source) == KernelLanguage::cuda;
  if (kernel.arch.empty() || !cuda) return {device_arch, ""};
  if (arch_runs_on(kernel.arch, device_arch)) return {kernel.arch, ""};
  auto t = parse_arch(kernel.arch);
  std::string runs_on = t && t->suffix == 'f'
                            ? "sm_" + std::to_string(t->number) +
                                  " and later devices of its family (sm_" +
                                  std::to_string(t->number / 10) + "x)"
                            : "sm_" + std::to_string(t ? t->number : 0) + " devices";
  std::string why = "kernel '" + kernel.name + "' is built for " + kernel.arch +
                    ", which runs only on " + runs_on + "; this device is " + device_arch;
  return {kernel.arch, bad_input(why, problem.spec_path.string(), kernel.arch_where.line,
                                 kernel.arch_where.field)
                           .to_string()};
}

}  // namespace kopt
