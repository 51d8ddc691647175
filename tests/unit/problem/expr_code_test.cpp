// Expressions written as C++ and Python (problem/expr_code.hpp): kopt's meaning kept where the
// languages differ from it, and only the parentheses the meaning needs.
#include "kopt/problem/expr_code.hpp"

#include <gtest/gtest.h>

namespace kopt {
namespace {

std::string code(const std::string& text, CodeLanguage lang) {
  auto e = Expr::parse(text);
  EXPECT_TRUE(e) << e.error().to_string();
  auto c = expr_code(*e, lang, [](const std::string& n) -> Expected<std::string> {
    if (n == "BLOCK") return std::string("int64_t(BLOCK)");
    if (n == "nope") return Unexpected(bad_input("'nope' is no dim"));
    return n;
  });
  EXPECT_TRUE(c) << c.error().to_string();
  return c ? *c : "";
}
std::string cpp(const std::string& text) {
  return code(text, CodeLanguage::cpp);
}
std::string py(const std::string& text) {
  return code(text, CodeLanguage::python);
}

TEST(ExprCode, CppKeepsKoptsIntegersAndItsHelpers) {
  EXPECT_EQ(cpp("ceil_div(batch_size * dim, BLOCK * VEC)"),
            "kopt_ceil_div(batch_size * dim, int64_t(BLOCK) * VEC)");
  EXPECT_EQ(cpp("N / 2 % 3"), "N / 2 % 3");
  EXPECT_EQ(cpp("2 ** K + pow(M, 2)"), "kopt_ipow(2, K) + kopt_ipow(M, 2)");
  EXPECT_EQ(cpp("log2(N)"), "kopt_ilog2(N)");
  EXPECT_EQ(cpp("min(M, N, 64)"), "std::min<int64_t>({M, N, 64})");
  EXPECT_EQ(cpp("max(M, 0.5)"), "std::max<double>({double(M), 0.5})");
  EXPECT_EQ(cpp("sqrt(N)"), "std::sqrt(double(N))");
  EXPECT_EQ(cpp("N % 1.5"), "std::fmod(N, 1.5)");
  EXPECT_EQ(cpp("4294967296 * N"), "4294967296LL * N");
  EXPECT_EQ(cpp("M > 1 && N < 2 || !K"), "(M > 1 && N < 2) || !K");
  EXPECT_EQ(cpp("M > 1 ? N : K"), "M > 1 ? N : K");
}

TEST(ExprCode, ParenthesesWhereTheTreeNeedsThem) {
  EXPECT_EQ(cpp("(M + N) * K"), "(M + N) * K");
  EXPECT_EQ(cpp("M - (N - K)"), "M - (N - K)");
  EXPECT_EQ(cpp("M - N - K"), "M - N - K");
  EXPECT_EQ(cpp("M / (N * K)"), "M / (N * K)");
  EXPECT_EQ(cpp("(M < N) == (N < K)"), "(M < N) == (N < K)");
  EXPECT_EQ(cpp("-(-M)"), "-(-M)");
  EXPECT_EQ(cpp("(M > 1 ? N : K) * 2"), "(M > 1 ? N : K) * 2");
  EXPECT_EQ(py("(M < N) == (N < K)"), "(M < N) == (N < K)") << "no chained comparison";
}

TEST(ExprCode, PythonTruncatesAsCAndGivesZeroOrOne) {
  EXPECT_EQ(py("ceil_div(batch_size * dim, BLOCK * VEC)"),
            "_kopt_ceil_div(batch_size * dim, int64_t(BLOCK) * VEC)");
  EXPECT_EQ(py("N / 2"), "_kopt_div(N, 2)");
  EXPECT_EQ(py("N % 3"), "_kopt_mod(N, 3)");
  EXPECT_EQ(py("N / 2.0"), "N / 2.0");
  EXPECT_EQ(py("M && N"), "int(bool(M) and bool(N))");
  EXPECT_EQ(py("!M"), "int(not M)");
  EXPECT_EQ(py("M > 1 ? N : K"), "(N if M > 1 else K)");
  EXPECT_EQ(py("2 ** K"), "(2 ** K)");
  EXPECT_EQ(py("min(M, 1.5)"), "float(min(M, 1.5))");
  EXPECT_EQ(py("log2(N)"), "_kopt_ilog2(N)");
}

TEST(ExprCode, ANameWithNoSpellingAndCeilDivOfARealAreErrors) {
  auto e = Expr::parse("nope + 1");
  ASSERT_TRUE(e);
  auto spell = [](const std::string& n) -> Expected<std::string> {
    if (n == "nope") return Unexpected(bad_input("'nope' is no dim"));
    return n;
  };
  auto c = expr_code(*e, CodeLanguage::cpp, spell);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("'nope' is no dim"), std::string::npos);
  auto real = Expr::parse("ceil_div(N, 0.5)");
  ASSERT_TRUE(real);
  auto r = expr_code(*real, CodeLanguage::python, spell);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("ceil_div() needs integers"), std::string::npos);
}

TEST(ExprCode, TheHelpersDefineWhatTheCodeCalls) {
  std::string c = expr_code_helpers(CodeLanguage::cpp);
  for (const char* f : {"kopt_ceil_div(", "kopt_ipow(", "kopt_ilog2("})
    EXPECT_NE(c.find(std::string("inline int64_t ") + f), std::string::npos) << f;
  std::string p = expr_code_helpers(CodeLanguage::python);
  for (const char* f : {"_kopt_div(", "_kopt_mod(", "_kopt_ceil_div(", "_kopt_ilog2("})
    EXPECT_NE(p.find(std::string("def ") + f), std::string::npos) << f;
}

}  // namespace
}  // namespace kopt
