#pragma once
// A finished run of the toy problem on the fake lab, in a directory: what report tests read.
#include <gtest/gtest.h>

#include <fstream>

#include "fake_lab.hpp"
#include "kopt/optimize/optimizer.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt::test {

inline void make_toy_run(const std::filesystem::path& problem_dir,
                         const std::filesystem::path& run_dir) {
  std::filesystem::create_directories(problem_dir);
  for (const char* f : {"ref.cu", "naive.cu", "tuned.cu"})
    std::ofstream(problem_dir / f) << "// " << f << "\n";
  auto p = parse_problem(k_problem, problem_dir / "kopt.toml");
  ASSERT_TRUE(p) << p.error().to_string();
  auto catalog = builtin_method_catalog();
  ASSERT_TRUE(catalog);
  FakeLab lab;
  optimize::OptimizeOptions o;
  o.run_dir = run_dir;
  auto s = optimize::run_optimize(*p, *catalog, o, lab, nullptr);
  ASSERT_TRUE(s) << s.error().to_string();
}

}  // namespace kopt::test
