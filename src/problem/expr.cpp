#include "kopt/problem/expr.hpp"

#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

#include "expr_node.hpp"

namespace kopt {

namespace {

using NodePtr = std::shared_ptr<const ExprNode>;

class Parser {
 public:
  explicit Parser(const std::string& s) : m_s(s) {}

  Expected<NodePtr> parse() {
    auto node = parse_ternary();
    if (!node) return node;
    skip_space();
    if (m_pos != m_s.size()) return fail("unexpected '" + std::string(1, m_s[m_pos]) + "'");
    return node;
  }

 private:
  Unexpected fail(const std::string& why) const {
    return Unexpected(bad_input("in expression '" + m_s + "' at column " +
                                std::to_string(m_pos + 1) + ": " + why));
  }
  void skip_space() {
    while (m_pos < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_pos]))) ++m_pos;
  }
  bool eat(std::string_view op) {
    skip_space();
    if (m_s.compare(m_pos, op.size(), op) != 0) return false;
    // Do not take '<' out of '<=', '*' out of '**', '=' out of '=='.
    std::size_t next = m_pos + op.size();
    if (op.size() == 1 && next < m_s.size()) {
      char c = m_s[next];
      if ((op == "<" || op == ">" || op == "!") && c == '=') return false;
      if (op == "*" && c == '*') return false;
    }
    m_pos = next;
    return true;
  }
  static NodePtr make(ExprNode::Kind k, std::string text, std::vector<NodePtr> children) {
    auto n = std::make_shared<ExprNode>();
    n->kind = k;
    n->text = std::move(text);
    n->children = std::move(children);
    return n;
  }

  template <class Next>
  Expected<NodePtr> binary_level(std::initializer_list<std::string_view> ops, Next next) {
    auto lhs = (this->*next)();
    if (!lhs) return lhs;
    while (true) {
      std::string_view hit;
      for (auto op : ops)
        if (eat(op)) {
          hit = op;
          break;
        }
      if (hit.empty()) return lhs;
      auto rhs = (this->*next)();
      if (!rhs) return rhs;
      lhs = make(ExprNode::Kind::binary, std::string(hit), {*lhs, *rhs});
    }
  }

  Expected<NodePtr> parse_ternary() {
    auto cond = parse_or();
    if (!cond || !eat("?")) return cond;
    auto yes = parse_ternary();
    if (!yes) return yes;
    if (!eat(":")) return fail("expected ':' of 'cond ? a : b'");
    auto no = parse_ternary();
    if (!no) return no;
    return make(ExprNode::Kind::binary, "?", {*cond, *yes, *no});
  }
  Expected<NodePtr> parse_or() { return binary_level({"||"}, &Parser::parse_and); }
  Expected<NodePtr> parse_and() { return binary_level({"&&"}, &Parser::parse_cmp); }
  Expected<NodePtr> parse_cmp() {
    return binary_level({"==", "!=", "<=", ">=", "<", ">"}, &Parser::parse_sum);
  }
  Expected<NodePtr> parse_sum() { return binary_level({"+", "-"}, &Parser::parse_prod); }
  Expected<NodePtr> parse_prod() { return binary_level({"*", "/", "%"}, &Parser::parse_unary); }

  Expected<NodePtr> parse_unary() {
    if (eat("-")) {
      auto operand = parse_unary();
      if (!operand) return operand;
      return make(ExprNode::Kind::unary, "-", {*operand});
    }
    if (eat("!")) {
      auto operand = parse_unary();
      if (!operand) return operand;
      return make(ExprNode::Kind::unary, "!", {*operand});
    }
    if (eat("+")) return parse_unary();
    return parse_pow();
  }

  Expected<NodePtr> parse_pow() {
    auto base = parse_atom();
    if (!base) return base;
    if (eat("**")) {
      auto exponent = parse_unary();
      if (!exponent) return exponent;
      return make(ExprNode::Kind::binary, "**", {*base, *exponent});
    }
    return base;
  }

  Expected<NodePtr> parse_atom() {
    skip_space();
    if (m_pos >= m_s.size()) return fail("expected a number, a name or '('");
    char c = m_s[m_pos];
    if (c == '(') {
      ++m_pos;
      auto inner = parse_ternary();
      if (!inner) return inner;
      if (!eat(")")) return fail("expected ')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t start = m_pos;
      while (m_pos < m_s.size() &&
             (std::isalnum(static_cast<unsigned char>(m_s[m_pos])) || m_s[m_pos] == '_'))
        ++m_pos;
      std::string name = m_s.substr(start, m_pos - start);
      if (!eat("(")) return make(ExprNode::Kind::name, name, {});
      std::vector<NodePtr> args;
      if (!eat(")")) {
        do {
          auto arg = parse_ternary();
          if (!arg) return arg;
          args.push_back(*arg);
        } while (eat(","));
        if (!eat(")")) return fail("expected ')' after the arguments of " + name + "()");
      }
      return check_call(name, std::move(args));
    }
    return fail("unexpected '" + std::string(1, c) + "'");
  }

  Expected<NodePtr> check_call(const std::string& name, std::vector<NodePtr> args) {
    static const std::map<std::string, std::pair<int, int>, std::less<>> arity = {
        {"min", {2, 64}}, {"max", {2, 64}}, {"abs", {1, 1}}, {"ceil_div", {2, 2}},
        {"pow", {2, 2}},  {"log2", {1, 1}}, {"sqrt", {1, 1}}};
    auto it = arity.find(name);
    if (it == arity.end())
      return fail("unknown function " + name +
                  "() (known: min, max, abs, ceil_div, pow, log2, sqrt)");
    int n = static_cast<int>(args.size());
    if (n < it->second.first || n > it->second.second)
      return fail(name + "() takes " + std::to_string(it->second.first) +
                  (it->second.second > it->second.first ? " or more" : "") + " argument(s), got " +
                  std::to_string(n));
    return make(ExprNode::Kind::call, name, std::move(args));
  }

  Expected<NodePtr> parse_number() {
    std::size_t start = m_pos;
    bool is_real = false;
    while (m_pos < m_s.size()) {
      char c = m_s[m_pos];
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '_') {
        ++m_pos;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_real = true;
        ++m_pos;
        if ((c == 'e' || c == 'E') && m_pos < m_s.size() &&
            (m_s[m_pos] == '-' || m_s[m_pos] == '+'))
          ++m_pos;
      } else {
        break;
      }
    }
    std::string digits;
    for (char c : m_s.substr(start, m_pos - start))
      if (c != '_') digits += c;
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprNode::Kind::number;
    n->text = digits;
    try {
      std::size_t used = 0;
      if (is_real) {
        n->value = std::stod(digits, &used);
      } else {
        n->value = static_cast<std::int64_t>(std::stoll(digits, &used));
      }
      if (used != digits.size()) return fail("malformed number '" + digits + "'");
    } catch (const std::exception&) {
      return fail("malformed or too large number '" + digits + "'");
    }
    return NodePtr(n);
  }

  const std::string& m_s;
  std::size_t m_pos = 0;
};

Unexpected eval_fail(const std::string& text, const std::string& why) {
  return Unexpected(bad_input("in expression '" + text + "': " + why));
}

bool is_int(const Value& v) {
  return std::holds_alternative<std::int64_t>(v);
}
std::int64_t as_int(const Value& v) {
  return std::get<std::int64_t>(v);
}

struct Evaluator {
  const Scope& scope;
  const std::string& text;

  Expected<Value> eval(const ExprNode& n) const {
    switch (n.kind) {
      case ExprNode::Kind::number:
        return n.value;
      case ExprNode::Kind::name: {
        auto it = scope.find(n.text);
        if (it == scope.end()) {
          std::string known;
          for (const auto& [k, v] : scope) known += (known.empty() ? "" : ", ") + k;
          return eval_fail(text, "unknown name '" + n.text +
                                     "' (known: " + (known.empty() ? "none" : known) + ")");
        }
        return it->second;
      }
      case ExprNode::Kind::unary: {
        auto v = eval(*n.children[0]);
        if (!v) return v;
        if (n.text == "!") return Value(std::int64_t(as_double(*v) == 0.0));
        if (is_int(*v)) {
          if (as_int(*v) == std::numeric_limits<std::int64_t>::min())
            return eval_fail(text, "integer overflow");
          return Value(-as_int(*v));
        }
        return Value(-std::get<double>(*v));
      }
      case ExprNode::Kind::binary:
        return binary(n);
      case ExprNode::Kind::call:
        return call(n);
    }
    return eval_fail(text, "internal: bad node");
  }

  Expected<Value> binary(const ExprNode& n) const {
    const std::string& op = n.text;
    auto a = eval(*n.children[0]);
    if (!a) return a;
    if (op == "?") return eval(*n.children[as_double(*a) != 0.0 ? 1 : 2]);
    if (op == "&&" && as_double(*a) == 0.0) return Value(std::int64_t{0});
    if (op == "||" && as_double(*a) != 0.0) return Value(std::int64_t{1});
    auto b = eval(*n.children[1]);
    if (!b) return b;
    if (op == "&&" || op == "||") return Value(std::int64_t(as_double(*b) != 0.0));
    bool ints = is_int(*a) && is_int(*b);
    if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") {
      int cmp = ints ? (as_int(*a) < as_int(*b)   ? -1
                        : as_int(*a) > as_int(*b) ? 1
                                                  : 0)
                     : (as_double(*a) < as_double(*b)   ? -1
                        : as_double(*a) > as_double(*b) ? 1
                                                        : 0);
      bool r = op == "=="   ? cmp == 0
               : op == "!=" ? cmp != 0
               : op == "<"  ? cmp < 0
               : op == "<=" ? cmp <= 0
               : op == ">"  ? cmp > 0
                            : cmp >= 0;
      return Value(std::int64_t(r));
    }
    if (ints) return int_arith(op, as_int(*a), as_int(*b));
    double x = as_double(*a), y = as_double(*b);
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/") {
      if (y == 0.0) return eval_fail(text, "division by zero");
      return Value(x / y);
    }
    if (op == "%") {
      if (y == 0.0) return eval_fail(text, "modulo by zero");
      return Value(std::fmod(x, y));
    }
    if (op == "**") return Value(std::pow(x, y));
    return eval_fail(text, "internal: unknown operator " + op);
  }

  Expected<Value> int_arith(const std::string& op, std::int64_t x, std::int64_t y) const {
    std::int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value(r);
    if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value(r);
    if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value(r);
    if (op == "/" || op == "%") {
      if (y == 0) return eval_fail(text, op == "/" ? "division by zero" : "modulo by zero");
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1)
        return eval_fail(text, "integer overflow");
      return Value(op == "/" ? x / y : x % y);
    }
    if (op == "**") {
      if (y < 0) return Value(std::pow(double(x), double(y)));
      std::int64_t acc = 1;
      for (std::int64_t i = 0; i < y; ++i)
        if (__builtin_mul_overflow(acc, x, &acc)) return eval_fail(text, "integer overflow");
      return Value(acc);
    }
    return eval_fail(text, "integer overflow in '" + op + "'");
  }

  Expected<Value> call(const ExprNode& n) const {
    std::vector<Value> args;
    for (const auto& c : n.children) {
      auto v = eval(*c);
      if (!v) return v;
      args.push_back(*v);
    }
    const std::string& f = n.text;
    bool ints = true;
    for (const auto& v : args) ints = ints && is_int(v);
    if (f == "min" || f == "max") {
      Value best = args[0];
      for (const auto& v : args) {
        bool less = as_double(v) < as_double(best) || (ints && as_int(v) < as_int(best));
        bool more = as_double(v) > as_double(best) || (ints && as_int(v) > as_int(best));
        if ((f == "min" && less) || (f == "max" && more)) best = v;
      }
      return ints ? best : Value(as_double(best));
    }
    if (f == "abs") {
      if (ints) return Value(as_int(args[0]) < 0 ? -as_int(args[0]) : as_int(args[0]));
      return Value(std::fabs(as_double(args[0])));
    }
    if (f == "ceil_div") {
      if (!ints) return eval_fail(text, "ceil_div() needs integers");
      std::int64_t a = as_int(args[0]), b = as_int(args[1]);
      if (b <= 0) return eval_fail(text, "ceil_div() by a divisor <= 0");
      if (a < 0) return Value(a / b);
      return Value(a / b + (a % b != 0));
    }
    if (f == "pow") return binary_pow(args[0], args[1]);
    if (f == "log2") {
      if (!ints || as_int(args[0]) <= 0) return Value(std::log2(as_double(args[0])));
      std::int64_t v = as_int(args[0]), r = 0;
      while (v >>= 1) ++r;
      return Value(r);
    }
    if (f == "sqrt") return Value(std::sqrt(as_double(args[0])));
    return eval_fail(text, "internal: unknown function " + f);
  }

  Expected<Value> binary_pow(const Value& a, const Value& b) const {
    if (is_int(a) && is_int(b)) return int_arith("**", as_int(a), as_int(b));
    return Value(std::pow(as_double(a), as_double(b)));
  }
};

void collect_names(const ExprNode& n, std::vector<std::string>& out) {
  if (n.kind == ExprNode::Kind::name) {
    for (const auto& s : out)
      if (s == n.text) return;
    out.push_back(n.text);
  }
  for (const auto& c : n.children) collect_names(*c, out);
}

}  // namespace

double as_double(const Value& v) {
  return is_int(v) ? static_cast<double>(as_int(v)) : std::get<double>(v);
}

std::string value_to_string(const Value& v) {
  if (is_int(v)) return std::to_string(as_int(v));
  std::ostringstream s;
  s.precision(17);
  s << std::get<double>(v);
  return s.str();
}

Expected<Expr> Expr::parse(const std::string& text) {
  Parser p(text);
  auto root = p.parse();
  if (!root) return Unexpected(root.error());
  Expr e;
  e.m_text = text;
  e.m_root = *root;
  return e;
}

Expr Expr::constant(std::int64_t v) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprNode::Kind::number;
  n->value = v;
  Expr e;
  e.m_text = std::to_string(v);
  e.m_root = n;
  return e;
}

Expected<Value> Expr::evaluate(const Scope& scope) const {
  if (!m_root) return Unexpected(internal_error("evaluating an empty expression"));
  return Evaluator{scope, m_text}.eval(*m_root);
}

Expected<std::int64_t> Expr::evaluate_int(const Scope& scope) const {
  auto v = evaluate(scope);
  if (!v) return Unexpected(v.error());
  if (!is_int(*v)) return eval_fail(m_text, "expected an integer, got " + value_to_string(*v));
  return as_int(*v);
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  if (m_root) collect_names(*m_root, out);
  return out;
}

}  // namespace kopt
