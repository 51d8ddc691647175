#include "kopt/tools/tool_probe.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/core/python.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

TEST(ToolVersion, ParsesWhatTheToolsPrint) {
  // Version banners as printed by CUDA 13.0 tools on the device (scripts/device-check).
  EXPECT_EQ(
      parse_tool_version(
          "nvcc",
          "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
          "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, "
          "V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n"),
      "13.0.88");
  EXPECT_EQ(parse_tool_version(
                "ncu",
                "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA "
                "Corporation\nVersion 2025.3.1.0 (build 36398880) (public-release)\n"),
            "2025.3.1.0");
  EXPECT_EQ(parse_tool_version("python3", "Python 3.12.3\n"), "3.12.3");
  EXPECT_EQ(parse_tool_version("nvcc", "garbage"), "");
}

CommandResult printed(std::string out, int code = 0) {
  CommandResult r;
  r.started = true;
  r.exit_code = code;
  r.out = std::move(out);
  return r;
}

TEST(NcuProbe, ReadsTheRecordedProbeAsCounterAccess) {
  auto csv = read_text_file(test::source_dir() / "tests/fixtures/ncu/probe_h100.csv");
  ASSERT_TRUE(csv);
  NcuProbe p = classify_ncu_probe(printed(*csv));
  EXPECT_EQ(p.access, CounterAccess::ok) << p.detail;
}

TEST(NcuProbe, PermissionErrorIsNamedWithTheFix) {
  // ncu's documented error code when counters are restricted to admin users.
  NcuProbe p =
      classify_ncu_probe(printed("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission "
                                 "to access NVIDIA GPU Performance "
                                 "Counters on the target device 0.\n",
                                 1));
  EXPECT_EQ(p.access, CounterAccess::no_permission);
  EXPECT_NE(p.detail.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
}

TEST(NcuProbe, NoMetricRowIsAFailureWithTheOutputTail) {
  NcuProbe p =
      classify_ncu_probe(printed("==PROF== Connected\n==WARNING== No kernels were profiled.\n"));
  EXPECT_EQ(p.access, CounterAccess::failed);
  EXPECT_NE(p.detail.find("No kernels were profiled"), std::string::npos);
  CommandResult missing;
  EXPECT_EQ(classify_ncu_probe(missing).access, CounterAccess::failed);
}

TEST(ProbeTool, MissingToolIsAFactNotAnError) {
  FakeCommandRunner runner;
  ToolInfo t = probe_tool(runner, "kopt-no-such-tool");
  EXPECT_FALSE(t.found);
  EXPECT_NE(t.note.find("not found"), std::string::npos);
  EXPECT_TRUE(runner.calls.empty());  // nothing to run
}

TEST(ProbePython, ReadsVersionsFromOneInterpreterRun) {
  FakeCommandRunner runner;
  // The Python kopt runs (core/python.hpp): the one whose versions env reports.
  auto python = find_program(choose_python("torch"));
  if (!python) GTEST_SKIP() << "no python3 on PATH";
  runner.on(python->string() + " --version", printed("Python 3.12.3\n"));
  runner.on(python->string(), printed("torch=2.11.0+cu130\ntorch_cuda=13.0\ntriton=3.6.0\n"));
  PythonInfo p = probe_python(runner);
  EXPECT_EQ(p.python.version, "3.12.3");
  EXPECT_EQ(p.torch, "2.11.0+cu130");
  EXPECT_EQ(p.torch_cuda, "13.0");
  EXPECT_EQ(p.triton, "3.6.0");
}

}  // namespace
}  // namespace kopt
