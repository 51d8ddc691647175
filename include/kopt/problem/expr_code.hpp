#pragma once
// A kopt.toml expression (expr.hpp) as C++ or Python source that computes what kopt computes:
// 64-bit integers where kopt has integers ('/' and '%' truncating as in C, ceil_div, integer
// pow and log2), doubles where it has reals. `kopt export` writes launchers with it.
#include <functional>
#include <string>

#include "kopt/core/error.hpp"
#include "kopt/problem/expr.hpp"

namespace kopt {

enum class CodeLanguage { cpp, python };

// How each name of the expression is spelled in the code (a variable, a macro, a number); an
// error from it is returned as it is. Every name is an integer (dims, params, sm_count).
using NameSpelling = std::function<Expected<std::string>(const std::string& name)>;

Expected<std::string> expr_code(const Expr& e, CodeLanguage language, const NameSpelling& name);

// The helpers the code calls (kopt_ceil_div, kopt_ipow, kopt_ilog2 in C++; _kopt_div,
// _kopt_mod, _kopt_ceil_div, _kopt_ilog2 in Python), to be defined once before it. The C++
// ones need <cstdint>, <cmath> and <algorithm>; the Python ones `import math`.
std::string expr_code_helpers(CodeLanguage language);

}  // namespace kopt
