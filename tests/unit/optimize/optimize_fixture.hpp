#pragma once
// The optimizer tests' fixture: a toy problem on a fake lab (fake_lab.hpp) whose timings and
// profiles follow a known model, and the options, runs and experience DB its tests start from.
// Named (not in an anonymous namespace): the optimizer_*_test.cpp files share the suite.
#include <gtest/gtest.h>

#include <fstream>

#include "fake_lab.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/optimize/optimizer.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt::optimize::fixtures {
using test::FakeLab;
using test::k_problem;

class Optimize : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"ref.cu", "naive.cu", "tuned.cu"})
      std::ofstream(m_dir.path() / f) << "// " << f << "\n";
    auto p = parse_problem(k_problem, m_dir.path() / "kopt.toml");
    ASSERT_TRUE(p) << p.error().to_string();
    m_problem = *p;
    m_catalog = *builtin_method_catalog();
  }
  OptimizeOptions options(const std::string& run = "run") {
    OptimizeOptions o;
    o.run_dir = m_dir.path() / run;
    o.iterations = 5;
    o.branches = 4;
    o.patience = 2;
    return o;
  }
  // The toy problem with no method toggles: its branches only tune.
  Expected<Problem> without_methods() {
    std::string text = k_problem;
    return parse_problem(text.substr(0, text.find("[kernels.methods]")),
                         m_dir.path() / "kopt.toml");
  }
  Expected<RunState> run(FakeLab& lab, const OptimizeOptions& o) {
    return run_optimize(m_problem, m_catalog, o, lab, nullptr);
  }
  // A run of `lab` (run directory `name`) that files its outcomes in a fresh experience DB.
  Expected<ExperienceDb> run_into_db(FakeLab& lab, const std::string& name) {
    auto db = ExperienceDb::open(m_dir.path() / "experience.db");
    if (!db) return db;
    OptimizeOptions o = options(name);
    o.experience = &*db;
    if (auto s = run(lab, o); !s) return Unexpected(s.error());
    return db;
  }
  TempDir m_dir{"kopt-optimize"};
  Problem m_problem;
  MethodCatalog m_catalog;
};

}  // namespace kopt::optimize::fixtures
