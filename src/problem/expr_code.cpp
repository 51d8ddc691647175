// Expressions as C++ or Python source (kopt/problem/expr_code.hpp). Every name is an integer,
// so whether a node is real is known from the tree: a real literal, sqrt, or an operation on a
// real. The code keeps kopt's meaning where C++ and Python differ from it: integer '/' and '%'
// truncate toward zero in Python too, `&&` gives 0 or 1 there, pow of integers stays integral.
#include "kopt/problem/expr_code.hpp"

#include <cstdint>
#include <limits>

#include "expr_node.hpp"

namespace kopt {
namespace {

// Binding strength of the code written, loosest first.
enum Prec : int { k_cond = 1, k_or, k_and, k_cmp, k_sum, k_prod, k_unary, k_atom };

struct Code {
  std::string text;
  int prec = k_atom;
  bool real = false;
};

bool is_comparison(const std::string& op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}

class Writer {
 public:
  Writer(CodeLanguage lang, const NameSpelling& name, const std::string& text)
      : m_cpp(lang == CodeLanguage::cpp), m_name(name), m_text(text) {}

  Expected<Code> write(const ExprNode& n) {
    switch (n.kind) {
      case ExprNode::Kind::number:
        return number(n.value);
      case ExprNode::Kind::name: {
        auto s = m_name(n.text);
        if (!s) return Unexpected(s.error());
        return Code{*s, k_atom, false};
      }
      case ExprNode::Kind::unary:
        return unary(n);
      case ExprNode::Kind::binary:
        return n.text == "?" ? cond(n) : binary(n);
      case ExprNode::Kind::call:
        return call(n);
    }
    return Unexpected(internal_error("expression '" + m_text + "': a node of no known kind"));
  }

 private:
  static std::string wrap(const Code& c, int at_least) {
    return c.prec < at_least ? "(" + c.text + ")" : c.text;
  }

  Code number(const Value& v) const {
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      bool wide = *i > std::numeric_limits<std::int32_t>::max() ||
                  *i < std::numeric_limits<std::int32_t>::min();
      std::string s = std::to_string(*i) + (wide && m_cpp ? "LL" : "");
      return {s, *i < 0 ? k_unary : k_atom, false};
    }
    std::string s = value_to_string(v);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return {s, s[0] == '-' ? k_unary : k_atom, true};
  }

  Expected<std::vector<Code>> children(const ExprNode& n) {
    std::vector<Code> out;
    for (const auto& c : n.children) {
      auto w = write(*c);
      if (!w) return Unexpected(w.error());
      out.push_back(std::move(*w));
    }
    return out;
  }

  Expected<Code> unary(const ExprNode& n) {
    auto a = write(*n.children[0]);
    if (!a) return a;
    if (n.text == "!") {
      if (m_cpp) return Code{"!" + wrap(*a, k_atom), k_unary, false};
      return Code{"int(not " + a->text + ")", k_atom, false};
    }
    // "- -x" stays apart: "--x" is a decrement in C++.
    return Code{"-" + wrap(*a, k_atom), k_unary, a->real};
  }

  Expected<Code> cond(const ExprNode& n) {
    auto c = children(n);
    if (!c) return Unexpected(c.error());
    const Code &test = (*c)[0], &yes = (*c)[1], &no = (*c)[2];
    bool real = yes.real || no.real;
    if (m_cpp)
      return Code{wrap(test, k_or) + " ? " + wrap(yes, k_or) + " : " + wrap(no, k_or), k_cond,
                  real};
    return Code{"(" + wrap(yes, k_or) + " if " + wrap(test, k_or) + " else " + wrap(no, k_or) + ")",
                k_atom, real};
  }

  Expected<Code> binary(const ExprNode& n) {
    auto c = children(n);
    if (!c) return Unexpected(c.error());
    const Code &a = (*c)[0], &b = (*c)[1];
    const std::string& op = n.text;
    bool real = a.real || b.real;
    if (op == "&&" || op == "||") {
      // `a && b || c` as `(a && b) || c`: what -Wparentheses asks for.
      if (m_cpp)
        return Code{wrap(a, op == "&&" ? k_and : k_and + 1) + " " + op + " " +
                        wrap(b, op == "&&" ? k_cmp : k_and + 1),
                    op == "&&" ? k_and : k_or, false};
      return Code{
          "int(bool(" + a.text + ") " + (op == "&&" ? "and" : "or") + " bool(" + b.text + "))",
          k_atom, false};
    }
    if (is_comparison(op)) return Code{wrap(a, k_sum) + " " + op + " " + wrap(b, k_sum), k_cmp};
    if (op == "**") return power(a, b);
    if (op == "+" || op == "-")
      return Code{wrap(a, k_sum) + " " + op + " " + wrap(b, k_prod), k_sum, real};
    if (op == "*") return Code{wrap(a, k_prod) + " * " + wrap(b, k_unary), k_prod, real};
    if (op == "/" || op == "%") {
      if (m_cpp && op == "%" && real)
        return Code{"std::fmod(" + a.text + ", " + b.text + ")", k_atom, true};
      if (m_cpp || (real && op == "/"))
        return Code{wrap(a, k_prod) + " " + op + " " + wrap(b, k_unary), k_prod, real};
      if (real) return Code{"math.fmod(" + a.text + ", " + b.text + ")", k_atom, true};
      return Code{
          std::string(op == "/" ? "_kopt_div(" : "_kopt_mod(") + a.text + ", " + b.text + ")",
          k_atom, false};
    }
    return Unexpected(bad_input("in expression '" + m_text + "': no code for operator " + op));
  }

  Code power(const Code& a, const Code& b) const {
    bool real = a.real || b.real;
    if (m_cpp)
      return {std::string(real ? "std::pow(" : "kopt_ipow(") + a.text + ", " + b.text + ")", k_atom,
              real};
    return {"(" + wrap(a, k_atom) + " ** " + wrap(b, k_unary) + ")", k_atom, real};
  }

  Expected<Code> call(const ExprNode& n) {
    auto c = children(n);
    if (!c) return Unexpected(c.error());
    const std::string& f = n.text;
    const std::vector<Code>& args = *c;
    bool real = false;
    for (const auto& a : args) real = real || a.real;
    auto list = [&](const std::string& sep, bool to_double) {
      std::string s;
      for (const auto& a : args)
        s += (s.empty() ? "" : sep) + (to_double && !a.real ? "double(" + a.text + ")" : a.text);
      return s;
    };
    if (f == "min" || f == "max") {
      if (m_cpp)
        return Code{
            "std::" + f + "<" + (real ? "double" : "int64_t") + ">({" + list(", ", real) + "})",
            k_atom, real};
      std::string s = f + "(" + list(", ", false) + ")";
      return Code{real ? "float(" + s + ")" : s, k_atom, real};
    }
    if (f == "abs") return Code{(m_cpp ? "std::abs(" : "abs(") + args[0].text + ")", k_atom, real};
    if (f == "ceil_div") {
      if (real)
        return Unexpected(bad_input("in expression '" + m_text + "': ceil_div() needs integers"));
      return Code{(m_cpp ? "kopt_ceil_div(" : "_kopt_ceil_div(") + list(", ", false) + ")", k_atom,
                  false};
    }
    if (f == "pow") return power(args[0], args[1]);
    if (f == "log2") {
      if (real)
        return Code{(m_cpp ? "std::log2(" : "math.log2(") + args[0].text + ")", k_atom, true};
      return Code{(m_cpp ? "kopt_ilog2(" : "_kopt_ilog2(") + args[0].text + ")", k_atom, false};
    }
    if (f == "sqrt")
      return Code{
          m_cpp ? "std::sqrt(double(" + args[0].text + "))" : "math.sqrt(" + args[0].text + ")",
          k_atom, true};
    return Unexpected(
        bad_input("in expression '" + m_text + "': no code for function " + f + "()"));
  }

  bool m_cpp;
  const NameSpelling& m_name;
  const std::string& m_text;
};

}  // namespace

Expected<std::string> expr_code(const Expr& e, CodeLanguage language, const NameSpelling& name) {
  if (!e.root()) return Unexpected(internal_error("writing an empty expression as code"));
  auto c = Writer(language, name, e.text()).write(*e.root());
  if (!c) return Unexpected(c.error());
  return c->text;
}

std::string expr_code_helpers(CodeLanguage language) {
  if (language == CodeLanguage::cpp)
    return "// kopt's integer helpers of launch expressions: ceil_div, pow and log2 (floor) as "
           "kopt\n"
           "// computes them.\n"
           "inline int64_t kopt_ceil_div(int64_t a, int64_t b) {\n"
           "  return a < 0 ? a / b : a / b + (a % b != 0);\n"
           "}\n"
           "inline int64_t kopt_ipow(int64_t a, int64_t b) {\n"
           "  int64_t r = 1;\n"
           "  for (int64_t i = 0; i < b; ++i) r *= a;\n"
           "  return r;\n"
           "}\n"
           "inline int64_t kopt_ilog2(int64_t a) {\n"
           "  int64_t r = -1;\n"
           "  for (; a > 0; a >>= 1) ++r;\n"
           "  return r;\n"
           "}\n";
  return "# kopt's integer arithmetic of shape expressions: '/' and '%' truncate toward zero as "
         "in C.\n"
         "def _kopt_div(a, b):\n"
         "    q = abs(a) // abs(b)\n"
         "    return q if (a < 0) == (b < 0) else -q\n\n\n"
         "def _kopt_mod(a, b):\n"
         "    return a - b * _kopt_div(a, b)\n\n\n"
         "def _kopt_ceil_div(a, b):\n"
         "    return _kopt_div(a, b) if a < 0 else -(-a // b)\n\n\n"
         "def _kopt_ilog2(a):\n"
         "    return a.bit_length() - 1 if a > 0 else math.log2(a)\n";
}

}  // namespace kopt
