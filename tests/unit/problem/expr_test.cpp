#include "kopt/problem/expr.hpp"

#include <gtest/gtest.h>

namespace kopt {
namespace {

Value eval(const std::string& text, const Scope& scope = {}) {
  auto e = Expr::parse(text);
  EXPECT_TRUE(e) << e.error().message;
  auto v = e->evaluate(scope);
  EXPECT_TRUE(v) << v.error().message;
  return *v;
}

std::int64_t ival(const std::string& text, const Scope& scope = {}) {
  return std::get<std::int64_t>(eval(text, scope));
}

std::string error_of(const std::string& text, const Scope& scope = {}) {
  auto e = Expr::parse(text);
  if (!e) return e.error().message;
  auto v = e->evaluate(scope);
  return v ? std::string("no error") : v.error().message;
}

TEST(Expr, PrecedenceAndAssociativity) {
  EXPECT_EQ(ival("1 + 2 * 3"), 7);
  EXPECT_EQ(ival("(1 + 2) * 3"), 9);
  EXPECT_EQ(ival("10 - 4 - 3"), 3);
  EXPECT_EQ(ival("100 / 10 / 5"), 2);
  EXPECT_EQ(ival("2 ** 3 ** 2"), 512);  // right-associative
  EXPECT_EQ(ival("-2 ** 2"), -4);
  EXPECT_EQ(ival("7 % 4 + 1"), 4);
  EXPECT_EQ(ival("1 + 2 == 3 && 4 > 3"), 1);
  EXPECT_EQ(ival("0 || 0 || 5 > 4"), 1);
  EXPECT_EQ(ival("!0 + !7"), 1);
  EXPECT_EQ(ival("1_048_576"), 1048576);
}

TEST(Expr, IntegerDivisionTruncatesLikeC) {
  EXPECT_EQ(ival("7 / 2"), 3);
  EXPECT_EQ(ival("-7 / 2"), -3);
  EXPECT_DOUBLE_EQ(std::get<double>(eval("7.0 / 2")), 3.5);
}

TEST(Expr, NamesAndFunctions) {
  Scope s{{"rows", std::int64_t{4096}}, {"cols", std::int64_t{1000}}, {"BLOCK", std::int64_t{256}}};
  EXPECT_EQ(ival("ceil_div(cols, BLOCK)", s), 4);
  EXPECT_EQ(ival("ceil_div(1024, 256)"), 4);
  EXPECT_EQ(ival("min(rows, cols, 7)", s), 7);
  EXPECT_EQ(ival("max(rows, cols)", s), 4096);
  EXPECT_EQ(ival("abs(-5)"), 5);
  EXPECT_EQ(ival("log2(4096)"), 12);
  EXPECT_EQ(ival("pow(2, 10)"), 1024);
  EXPECT_DOUBLE_EQ(std::get<double>(eval("sqrt(16)")), 4.0);
  EXPECT_EQ(ival("cols % 4 == 0 ? 4 : 1", s), 4);
  EXPECT_EQ(ival("cols % 3 == 0 ? 3 : cols % 2 == 0 ? 2 : 1", s), 2);
  auto e = Expr::parse("rows * cols + ceil_div(rows, BLOCK) + rows");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->names(), (std::vector<std::string>{"rows", "cols", "BLOCK"}));
}

TEST(Expr, FloatingPoint) {
  EXPECT_DOUBLE_EQ(std::get<double>(eval("1e-6")), 1e-6);
  EXPECT_DOUBLE_EQ(std::get<double>(eval("2.5 * 4")), 10.0);
  EXPECT_EQ(ival("2.5 < 3"), 1);
}

TEST(Expr, ErrorsSayWhereAndWhy) {
  EXPECT_EQ(error_of("rows * colls", {{"rows", std::int64_t{1}}}),
            "in expression 'rows * colls': unknown name 'colls' (known: rows)");
  EXPECT_EQ(error_of("1 +"), "in expression '1 +' at column 4: expected a number, a name or '('");
  EXPECT_EQ(error_of("(1 + 2"), "in expression '(1 + 2' at column 7: expected ')'");
  EXPECT_EQ(error_of("1 $ 2"), "in expression '1 $ 2' at column 3: unexpected '$'");
  EXPECT_EQ(error_of("foo(1)"),
            "in expression 'foo(1)' at column 7: unknown function foo() (known: min, max, abs, "
            "ceil_div, pow, log2, sqrt)");
  EXPECT_EQ(error_of("ceil_div(1)"),
            "in expression 'ceil_div(1)' at column 12: ceil_div() takes 2 argument(s), got 1");
  EXPECT_EQ(error_of("1 / 0"), "in expression '1 / 0': division by zero");
  EXPECT_EQ(error_of("5 % 0"), "in expression '5 % 0': modulo by zero");
  EXPECT_EQ(error_of("9223372036854775807 + 1"),
            "in expression '9223372036854775807 + 1': integer overflow in '+'");
  EXPECT_EQ(error_of("2 ** 64"), "in expression '2 ** 64': integer overflow");
  EXPECT_EQ(error_of("1 ? 2"), "in expression '1 ? 2' at column 6: expected ':' of 'cond ? a : b'");
}

TEST(Expr, EvaluateIntRejectsReals) {
  auto e = Expr::parse("rows / 2.0");
  ASSERT_TRUE(e);
  auto v = e->evaluate_int({{"rows", std::int64_t{3}}});
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().message, "in expression 'rows / 2.0': expected an integer, got 1.5");
}

TEST(Expr, ShortCircuitSkipsErrors) {
  EXPECT_EQ(ival("0 && 1 / 0"), 0);
  EXPECT_EQ(ival("1 || 1 / 0"), 1);
  EXPECT_EQ(ival("1 ? 2 : 1 / 0"), 2);
}

}  // namespace
}  // namespace kopt
