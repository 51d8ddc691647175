#include "kopt/tools/ncu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ncu_fixtures.hpp"

namespace kopt {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string after(const std::vector<std::string>& v, const std::string& flag) {
  auto it = std::find(v.begin(), v.end(), flag);
  return it == v.end() || it + 1 == v.end() ? std::string{} : *(it + 1);
}

NcuRequest request() {
  NcuRequest r;
  r.ncu = "/opt/ncu";
  r.questions = default_ncu_questions();
  r.kernel_name = "_Z6kernelPf";
  r.report = "/tmp/out/profile";
  r.program = {"kopt", "worker", "--once", "job.json"};
  return r;
}

TEST(NcuCommand, ClocksAloneTheKernelFilteredExactlyAndOnlyTheJobsRangesProfiled) {
  auto argv = ncu_profile_argv(request());
  EXPECT_EQ(argv[0], "/opt/ncu");
  EXPECT_EQ(after(argv, "--clock-control"), "none");
  EXPECT_EQ(after(argv, "--kernel-name-base"), "mangled");
  EXPECT_EQ(after(argv, "--kernel-name"), "_Z6kernelPf");
  // Warm-up launches run outside the jobs' ranges: ncu counts no launch, it filters by range.
  EXPECT_TRUE(contains(argv, "--nvtx"));
  EXPECT_EQ(after(argv, "--nvtx-include"), "regex:kopt-job-[0-9]+/");
  EXPECT_FALSE(contains(argv, "--launch-skip"));
  EXPECT_FALSE(contains(argv, "--launch-count"));
  EXPECT_EQ(after(argv, "--export"), "/tmp/out/profile");
  EXPECT_FALSE(contains(argv, "--set"));
  EXPECT_EQ(std::vector<std::string>(argv.end() - 4, argv.end()), request().program);
}

TEST(NcuCommand, MinimalListsHaveNoDuplicatesAndNoFullSet) {
  auto argv = ncu_profile_argv(request());
  std::string list = after(argv, "--metrics");
  std::set<std::string> seen;
  std::size_t n = 0, start = 0;
  while (start < list.size()) {
    std::size_t comma = list.find(',', start);
    std::string m =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    EXPECT_TRUE(seen.insert(m).second) << "duplicate " << m;
    ++n;
    start = comma == std::string::npos ? list.size() : comma + 1;
  }
  EXPECT_GT(n, 60u);
  EXPECT_LT(n, 120u);
  EXPECT_TRUE(seen.contains("gpu__time_duration.sum"));
  EXPECT_TRUE(seen.contains("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"));
  EXPECT_FALSE(contains(argv, "--section"));  // source counters only when asked
}

TEST(NcuCommand, FullSetAndSourceCountersOnRequest) {
  NcuRequest r = request();
  r.set = "full";
  auto argv = ncu_profile_argv(r);
  EXPECT_EQ(after(argv, "--set"), "full");
  EXPECT_FALSE(contains(argv, "--metrics"));
  r.set.reset();
  r.questions = {"sol", "source"};
  argv = ncu_profile_argv(r);
  EXPECT_EQ(after(argv, "--section"), "SourceCounters");
  r.clock_control = "base";
  EXPECT_EQ(after(ncu_profile_argv(r), "--clock-control"), "base");
}

TEST(NcuCommand, UnknownQuestionIsBadInput) {
  auto m = metrics_for_questions({"sol", "cache"});
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind, ErrorKind::bad_input);
  EXPECT_NE(m.error().message.find("'cache'"), std::string::npos);
}

TEST(NcuCommand, ImportPrintsTheRawPageInBaseUnits) {
  auto argv = ncu_import_argv("/opt/ncu", "/tmp/p.ncu-rep");
  EXPECT_EQ(after(argv, "--import"), "/tmp/p.ncu-rep");
  EXPECT_EQ(after(argv, "--page"), "raw");
  EXPECT_EQ(after(argv, "--print-units"), "base");
  EXPECT_TRUE(contains(argv, "--csv"));
}

CommandResult result(int code, std::string out, std::string err = "") {
  CommandResult r;
  r.started = true;
  r.exit_code = code;
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

TEST(NcuOutcome, PermissionNoKernelAndFailures) {
  EXPECT_EQ(classify_ncu_run(result(0, "==PROF== Disconnected\n")).failure, NcuFailure::none);
  auto perm = classify_ncu_run(
      result(1, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n"));
  EXPECT_EQ(perm.failure, NcuFailure::no_permission);
  EXPECT_NE(perm.message.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
  EXPECT_EQ(classify_ncu_run(result(0, "==WARNING== No kernels were profiled.\n")).failure,
            NcuFailure::no_kernel_profiled);
  auto failed =
      classify_ncu_run(result(1, "", "==ERROR== The application returned an error code (1).\n"));
  EXPECT_EQ(failed.failure, NcuFailure::program_failed);
  EXPECT_NE(failed.message.find("application returned an error"), std::string::npos);
  CommandResult missing;
  EXPECT_EQ(classify_ncu_run(missing).failure, NcuFailure::not_found);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

TEST(NcuSession, OneFilterForSeveralKernels) {
  // Equal filters stay one exact name; any kernel (a solve() library's) makes the whole session
  // unfiltered.
  EXPECT_EQ(ncu_kernel_filter_union({"_Z4gemmPKfS0_Pf", "_Z4gemmPKfS0_Pf"}), "_Z4gemmPKfS0_Pf");
  EXPECT_EQ(ncu_kernel_filter_union({"_Z4gemmPKfS0_Pf", ""}), "");
  // Names and a Triton kernel's regex join in one regex; '$' in a name is escaped.
  EXPECT_EQ(ncu_kernel_filter_union({"naive", "regex:^(_attn_fwd|_prep)$", "a$b"}),
            "regex:^(a\\$b|naive|_attn_fwd|_prep)$");
  EXPECT_EQ(ncu_job_range(3), "kopt-job-3");
}

// A real session over two kernels (tests/fixtures/ncu/README.md): split by NVTX range, each
// job's part is a CSV of its own launch, with the header and units rows.
TEST(NcuSession, TheReportIsSplitByEachJobsRange) {
  const std::string csv = test::ncu_fixture_text("h100/multi_session_softmax.csv");
  auto whole = parse_ncu_csv(csv, "multi_session_softmax.csv");
  ASSERT_TRUE(whole) << whole.error().message;
  ASSERT_EQ(whole->launches.size(), 2u);
  const char* names[] = {"softmax_naive", "softmax_tuned"};
  for (std::size_t job = 0; job < 2; ++job) {
    auto part = parse_ncu_csv(ncu_csv_for_job(csv, job), "part");
    ASSERT_TRUE(part) << part.error().message;
    ASSERT_EQ(part->launches.size(), 1u) << job;
    EXPECT_EQ(part->launches[0].kernel, names[job]);
    EXPECT_EQ(part->launches[0].metrics, whole->launches[job].metrics);
  }
  auto none = parse_ncu_csv(ncu_csv_for_job(csv, 2), "none");  // no such job: no launch
  EXPECT_TRUE(!none || none->launches.empty());
}

}  // namespace
}  // namespace kopt
