#pragma once
// The nodes of a parsed expression (kopt/problem/expr.hpp), private to src/problem/: the
// evaluator and the code writer (expr_code.cpp) walk them.
#include <memory>
#include <string>
#include <vector>

#include "kopt/problem/expr.hpp"

namespace kopt {

struct ExprNode {
  enum class Kind { number, name, unary, binary, call } kind;
  Value value{std::int64_t{0}};
  std::string text;  // name, operator or function ("?" for cond ? a : b, three children)
  std::vector<std::shared_ptr<const ExprNode>> children;
};

}  // namespace kopt
