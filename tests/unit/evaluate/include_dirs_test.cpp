// include_dirs: read from kopt.toml (folders, or a Python package's folder), resolved when a
// build needs them; a missing one refuses the kernel's builds with the file, line and field,
// and says what to install.
#include "kopt/evaluate/include_dirs.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "kopt/core/fs.hpp"
#include "kopt/evaluate/variant_jobs.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt::evaluate {
namespace {

const char* k_spec = R"TOML(name = "inc"

[dims]
n = 64

[[tensors]]
name = "x"
dtype = "f32"
shape = ["n"]
role = "input"

[[tensors]]
name = "y"
dtype = "f32"
shape = ["n"]
role = "output"

[reference]
kind = "cpp"
source = "ref.cpp"
entry = "ref"
args = ["x", "y", "n"]

[[kernels]]
name = "k"
source = "kernel.cu"
entry = "k"
args = ["x", "y", "n"]
grid = [1]
block = [64]
include_dirs = ["inc", { python_package = "PACKAGE", path = "SUB", pip = "PIP" }]
)TOML";

class IncludeDirs : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"kernel.cu", "ref.cpp"}) std::ofstream(m_dir.path() / f) << "//\n";
    std::filesystem::create_directories(m_dir.path() / "inc");
  }
  Expected<Problem> parse(const std::string& package, const std::string& sub,
                          const std::string& pip) {
    std::string text = k_spec;
    for (auto [from, to] :
         {std::pair<std::string, std::string>{"PACKAGE", package}, {"SUB", sub}, {"PIP", pip}})
      text.replace(text.find(from), from.size(), to);
    return parse_problem(text, m_dir.path() / "kopt.toml");
  }
  TempDir m_dir{"kopt-include-dirs-test"};
};

TEST_F(IncludeDirs, APathAndAnInstalledPackageBecomeFoldersOfTheBuild) {
  // json is a package of every Python: its folder stands in for cutlass_library's.
  auto p = parse("json", "", "");
  ASSERT_TRUE(p) << p.error().to_string();
  const KernelSpec& k = p->kernels[0];
  ASSERT_EQ(k.include_dirs.size(), 2u);
  EXPECT_EQ(k.include_dirs[0].path, "inc");
  EXPECT_EQ(k.include_dirs[1].python_package, "json");
  EXPECT_EQ(k.include_dirs[1].where.line, 31);
  EXPECT_EQ(k.include_dirs[1].where.field, "kernels[0].include_dirs[1]");
  ResolvedIncludes r = resolve_include_dirs(*p, k);
  ASSERT_EQ(r.missing, "");
  ASSERT_EQ(r.dirs.size(), 2u);
  EXPECT_EQ(r.dirs[0], m_dir.path() / "inc");
  EXPECT_EQ(r.dirs[1].filename(), "json");
  EXPECT_TRUE(std::filesystem::is_regular_file(r.dirs[1] / "__init__.py"));
  CompileRequest req = compile_request(*p, k, {}, "sm_90");
  EXPECT_EQ(req.refused, "");
  EXPECT_EQ(req.include_dirs.size(), 3u);  // the problem dir first
}

TEST_F(IncludeDirs, AMissingPackageRefusesTheBuildAndSaysWhatToInstall) {
  auto p = parse("kopt_no_such_package", "source/include", "nvidia-cutlass");
  ASSERT_TRUE(p) << p.error().to_string();  // loading does not need it
  ResolvedIncludes r = resolve_include_dirs(*p, p->kernels[0]);
  std::string where = (m_dir.path() / "kopt.toml").string() + ":31: kernels[0].include_dirs[1]: ";
  EXPECT_EQ(r.missing,
            where +
                "the Python package 'kopt_no_such_package' is not installed (looked in .tools/* "
                "beside kopt's checkout and in python3's path): pip install nvidia-cutlass, or run "
                "scripts/bootstrap --cutlass");
  CompileRequest req = compile_request(*p, p->kernels[0], {}, "sm_90");
  EXPECT_EQ(req.refused, r.missing);

  // A folder inside a package that is there, but not that folder.
  auto q = parse("json", "no/such/dir", "");
  ASSERT_TRUE(q);
  EXPECT_NE(resolve_include_dirs(*q, q->kernels[0]).missing.find("include_dirs[1]: no folder "),
            std::string::npos);
}

TEST_F(IncludeDirs, BadEntriesNameTheField) {
  std::string text = k_spec;
  text.replace(text.find("[\"inc\""), 6, "[3");
  auto p = parse_problem(text, m_dir.path() / "kopt.toml");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().to_string().find("kernels[0].include_dirs[0]: expected a folder"),
            std::string::npos)
      << p.error().to_string();
  auto q = parse("json\", extra = \"1", "", "");
  ASSERT_FALSE(q);
  EXPECT_NE(q.error().to_string().find("include_dirs[1].extra: unknown field"), std::string::npos)
      << q.error().to_string();
}

}  // namespace
}  // namespace kopt::evaluate
