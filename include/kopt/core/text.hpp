#pragma once
// Small text helpers shared by the readers of sources and tool output.
#include <string>

namespace kopt {

// `s` without leading and trailing white space (spaces, tabs, CR, LF).
std::string trim(std::string s);

}  // namespace kopt
