#pragma once
// target.md: the roofs with their sources, the problem's FLOPs and bytes, and the stop conditions.
#include <string>

#include "kopt/analysis/target.hpp"

namespace kopt {

std::string target_markdown(const Target& t);

}  // namespace kopt
