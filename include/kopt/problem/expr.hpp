#pragma once
// Arithmetic expressions over dims and params: shapes, launch shapes, cost formulas, constraints.
//
// Grammar (C-like precedence):  cond := or ('?' cond ':' cond)? ; or := and ('||' and)* ; and :=
// cmp ('&&' cmp)* ; cmp := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)? ; sum := prod (('+'|'-') prod)*
// ; prod := unary (('*'|'/'|'%') unary)* ; unary := ('-'|'!') unary | pow ; pow := atom ('**'
// unary)? ; atom := number | name | name '(' args ')' | '(' cond ')' Functions: min, max, abs,
// ceil_div, pow, log2 (integer floor), sqrt. Integers are 64-bit and checked for overflow; '/'
// between integers truncates as in C.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "kopt/core/error.hpp"

namespace kopt {

using Value = std::variant<std::int64_t, double>;
double as_double(const Value& v);
std::string value_to_string(const Value& v);

using Scope = std::map<std::string, Value, std::less<>>;

struct ExprNode;

class Expr {
 public:
  Expr() = default;
  // Parses text; on failure the Error says where (column) and why. Field/line are left to the
  // caller.
  static Expected<Expr> parse(const std::string& text);
  static Expr constant(std::int64_t v);

  Expected<Value> evaluate(const Scope& scope) const;
  // Evaluates and requires an integer result.
  Expected<std::int64_t> evaluate_int(const Scope& scope) const;
  // Names the expression refers to, in order of first use.
  std::vector<std::string> names() const;
  const std::string& text() const { return m_text; }
  bool empty() const { return !m_root; }
  // The parsed tree, for the readers in src/problem/ that know its nodes (expr_node.hpp).
  const ExprNode* root() const { return m_root.get(); }

 private:
  std::string m_text;
  std::shared_ptr<const ExprNode> m_root;
};

}  // namespace kopt
