#include "kopt/tools/ncu_csv.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "ncu_fixtures.hpp"

namespace kopt {
namespace {

TEST(NcuNumber, ThousandsSeparatorsAndMissingValues) {
  EXPECT_DOUBLE_EQ(*parse_ncu_number("1,924,129,199.60"), 1924129199.60);
  EXPECT_DOUBLE_EQ(*parse_ncu_number("2,944"), 2944);
  EXPECT_DOUBLE_EQ(*parse_ncu_number("0.24"), 0.24);
  EXPECT_FALSE(parse_ncu_number("n/a"));
  EXPECT_FALSE(parse_ncu_number(""));
  EXPECT_FALSE(parse_ncu_number("nan"));
  EXPECT_FALSE(parse_ncu_number("PolicySpread"));
}

TEST(NcuUnits, ScaleToBaseUnits) {
  EXPECT_EQ(ncu_unit_scale("usecond"), (std::pair<double, std::string>{1e3, "ns"}));
  EXPECT_EQ(ncu_unit_scale("msecond"), (std::pair<double, std::string>{1e6, "ns"}));
  EXPECT_EQ(ncu_unit_scale("Mbyte"), (std::pair<double, std::string>{1e6, "byte"}));
  EXPECT_EQ(ncu_unit_scale("Gbyte/second"), (std::pair<double, std::string>{1e9, "byte/s"}));
  EXPECT_EQ(ncu_unit_scale("Ghz"), (std::pair<double, std::string>{1e9, "hz"}));
  EXPECT_EQ(ncu_unit_scale("%"), (std::pair<double, std::string>{1, "%"}));
  EXPECT_EQ(ncu_unit_scale("register/thread"),
            (std::pair<double, std::string>{1, "register/thread"}));
}

TEST(NcuCsv, EveryRecordedWideCsvParses) {
  int files = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(test::source_dir() / "tests/fixtures/ncu/h100")) {
    std::string file = e.path().filename().string();
    if (file.starts_with("details_") || file.starts_with("multi_")) continue;
    auto r = parse_ncu_csv(test::ncu_fixture_text("h100/" + e.path().filename().string()),
                           e.path().string());
    ASSERT_TRUE(r) << e.path() << ": " << r.error().to_string();
    EXPECT_EQ(r->layout, "wide");
    ASSERT_EQ(r->launches.size(), 1u) << e.path();
    const NcuLaunch& l = r->launches[0];
    EXPECT_GT(l.metrics.at("gpu__time_duration.sum"), 1000)
        << e.path();  // every example runs > 1 us
    EXPECT_EQ(l.units.at("gpu__time_duration.sum"), "ns");
    EXPECT_EQ(l.attributes.at("device__attribute_display_name"), "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(l.cc, "9.0");
    ++files;
  }
  EXPECT_GE(files, 15);
}

TEST(NcuCsv, WideCsvKeepsKernelAndMetrics) {
  auto r = parse_ncu_csv(test::ncu_fixture_text("h100/transpose_naive.csv"), "transpose_naive.csv");
  ASSERT_TRUE(r);
  const NcuLaunch& l = r->launches[0];
  EXPECT_EQ(l.kernel, "transpose_naive");
  EXPECT_EQ(l.block, "(32, 8, 1)");
  EXPECT_EQ(l.metrics.at("device__attribute_multiprocessor_count"), 132);
  EXPECT_EQ(l.metrics.at("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"), 4);
}

TEST(NcuCsv, LongLayoutMapsSectionLabelsToMetricNames) {
  // ncu --page details --set full, as printed (labels, not metric names; units not base).
  auto r = parse_ncu_csv(test::ncu_fixture_text("h100/details_probe_full.csv"),
                         "details_probe_full.csv");
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->layout, "long");
  ASSERT_EQ(r->launches.size(), 1u);
  const auto& m = r->launches[0].metrics;
  EXPECT_EQ(r->launches[0].kernel, "kopt_probe");
  EXPECT_DOUBLE_EQ(m.at("gpu__time_duration.sum"), 3008);
  EXPECT_DOUBLE_EQ(m.at("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 3.39);
  EXPECT_DOUBLE_EQ(m.at("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"), 12.06);
  EXPECT_DOUBLE_EQ(m.at("launch__waves_per_multiprocessor"), 0.24);
  EXPECT_DOUBLE_EQ(m.at("launch__occupancy_limit_warps"), 8);
  EXPECT_FALSE(r->messages.empty());  // the ==WARNING== lines are kept
}

TEST(NcuCsv, LongLayoutWithMetricNames) {
  // `ncu --csv --metrics gpu__time_duration.sum` (details page, metric names as asked).
  auto r = parse_ncu_csv(test::ncu_fixture_text("probe_h100.csv"), "probe_h100.csv");
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->layout, "long");
  EXPECT_EQ(r->launches[0].kernel, "kopt_probe");
  EXPECT_GT(r->launches[0].metrics.at("gpu__time_duration.sum"), 1000);
}

TEST(NcuCsv, SeveralKernelsAndLaunches) {
  // ncu over `kopt check examples/softmax`: the reference and two kernels, 3 seeds each,
  // with the checker's own output before the table.
  auto r = parse_ncu_csv(test::ncu_fixture_text("h100/multi_kernel_check_softmax.csv"), "multi");
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->launches.size(), 9u);
  auto longest = select_kernel(*r, "");
  ASSERT_TRUE(longest);
  EXPECT_EQ(longest->kernel, "softmax_naive");  // ~1.4 ms a launch against ~20 us
  EXPECT_EQ(longest->launches, 3u);
  EXPECT_EQ(longest->launch_ids, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(longest->other_kernels, (std::vector<std::string>{"softmax_ref", "softmax_tuned"}));
  auto tuned = select_kernel(*r, "softmax_tuned");
  ASSERT_TRUE(tuned);
  double sum = 0;
  for (const auto& l : r->launches)
    if (l.kernel == "softmax_tuned") sum += l.metrics.at("gpu__time_duration.sum");
  EXPECT_DOUBLE_EQ(tuned->metrics.at("gpu__time_duration.sum"),
                   sum / 3);  // the average of its launches
  auto by_part = select_kernel(*r, "ref");
  ASSERT_TRUE(by_part);
  EXPECT_EQ(by_part->kernel, "softmax_ref");
  auto none = select_kernel(*r, "gemm");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("softmax_ref, softmax_naive, softmax_tuned"),
            std::string::npos);
}

TEST(NcuCsv, BadInputIsAClearError) {
  auto empty = parse_ncu_csv("", "empty.csv");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().kind, ErrorKind::bad_input);
  EXPECT_NE(empty.error().to_string().find("empty.csv"), std::string::npos);

  auto other = parse_ncu_csv("\"name\",\"value\"\n\"a\",\"1\"\n", "other.csv");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("not ncu's header"), std::string::npos);

  std::string full = test::ncu_fixture_text("h100/softmax_tuned.csv");
  std::string truncated = full.substr(0, full.size() - 200);  // the data row cut short
  auto cut = parse_ncu_csv(truncated, "cut.csv");
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find("truncated"), std::string::npos);
  EXPECT_EQ(cut.error().line, 3);

  auto perm =
      parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n", "perm.csv");
  ASSERT_FALSE(perm);
  EXPECT_EQ(perm.error().kind, ErrorKind::environment);

  auto prose = parse_ncu_csv("\"ID\",\"Kernel Name\"\nhello world\n", "prose.csv");
  ASSERT_FALSE(prose);
  EXPECT_EQ(prose.error().line, 2);
}

}  // namespace
}  // namespace kopt
