// Reports from a run directory alone: golden markdown (dates masked), the HTML's charts,
// and runs with missing, masked or damaged records.
#include "kopt/report/run_report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "kopt/core/fs.hpp"
#include "kopt_binary.hpp"
#include "toy_run.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

std::string masked(std::string text) {
  return std::regex_replace(text, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"), "DATE");
}

// Compares with tests/fixtures/reports/NAME; KOPT_UPDATE_GOLDEN=1 rewrites the file.
void expect_golden(const std::string& name, const std::string& text) {
  fs::path golden = test::source_dir() / "tests/fixtures/reports" / name;
  if (std::getenv("KOPT_UPDATE_GOLDEN")) {
    ASSERT_TRUE(write_text_atomic(golden, text));
  }
  auto want = read_text_file(golden);
  ASSERT_TRUE(want) << golden << " missing: run with KOPT_UPDATE_GOLDEN=1 once";
  EXPECT_EQ(text, *want) << "differs from " << golden;
}

class RunReports : public ::testing::Test {
 protected:
  void SetUp() override { test::make_toy_run(m_dir.path() / "toy", run()); }
  fs::path run() const { return m_dir.path() / "run"; }
  TempDir m_dir{"kopt-report"};
};

TEST_F(RunReports, ReportAndBenchmarkMarkdownAreGolden) {
  RunReport r = load_run_report(run());
  ASSERT_TRUE(r.state);
  EXPECT_NEAR(*r.speedup(), 100.0 / 35.0, 1e-9);
  EXPECT_NEAR(*r.pct_of_roof(*r.best), 100.0 * 9.0e7 / 35e-6 / 3e12, 1e-9);
  expect_golden("toy_report.md", masked(report_markdown(r)));
  expect_golden("toy_benchmark.md", masked(benchmark_markdown(r)));
}

// A ref.py's PyTorch baselines are rows of benchmark.md; one this torch lacks says why.
TEST_F(RunReports, PytorchBaselinesAreRowsOfTheBenchmark) {
  auto s = load_run_state(run());
  ASSERT_TRUE(s);
  s->reference.reset();
  s->baselines.push_back(EvaluationRecord{
      "torch eager", "torch eager", {}, VariantStatus::ok, 70e-6, 0.01, 500, "", "", ""});
  s->baselines.push_back(EvaluationRecord{"torch.compile",
                                          "torch.compile",
                                          {},
                                          VariantStatus::unavailable,
                                          0,
                                          0,
                                          0,
                                          "torch 1.13 has no torch.compile | (it came with 2.0)",
                                          "",
                                          ""});
  ASSERT_TRUE(save_run_state(run(), *s));
  auto again = load_run_state(run());
  ASSERT_TRUE(again);
  ASSERT_EQ(again->baselines.size(), 2u);
  std::string md = benchmark_markdown(load_run_report(run()));
  EXPECT_NE(md.find("| PyTorch: torch eager | 70 us | ±1.00 % | 500 | 1.43× |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| PyTorch: torch.compile | unavailable | — | — | — | torch 1.13 has no "
                    "torch.compile / (it came"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("was not timed in this run"), std::string::npos) << md;
}

TEST_F(RunReports, HtmlIsSelfContainedWithItsCharts) {
  std::string html = report_html(load_run_report(run()));
  for (const char* id : {"id=\"roofline\"", "id=\"timeline\"", "id=\"attribution\""})
    EXPECT_NE(html.find(id), std::string::npos) << id;
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);             // nothing fetched from anywhere
  EXPECT_NE(html.find("<title>v1 tuned"), std::string::npos);  // hover details of a point
}

// report.html says what report.md says after its table: the same sections, from the same
// records (the issue: it lacked the honesty, methods-by-class and what-next sections).
TEST_F(RunReports, HtmlHasEverySectionOfTheMarkdown) {
  auto s = load_run_state(run());
  ASSERT_TRUE(s);
  s->versions[1].flags.push_back("bimodal (two clusters)");  // an honesty check to show
  ASSERT_TRUE(save_run_state(run(), *s));
  RunReport r = load_run_report(run());
  std::string md = report_markdown(r), html = report_html(r);
  std::vector<std::string> titles;
  for (std::size_t at = md.find("\n## "); at != std::string::npos; at = md.find("\n## ", at + 1))
    titles.push_back(md.substr(at + 4, md.find('\n', at + 1) - at - 4));
  for (const char* want : {"Honesty checks", "Methods by class", "What to try next", "Attribution"})
    EXPECT_NE(std::find(titles.begin(), titles.end(), want), titles.end()) << want << "\n" << md;
  for (const auto& t : titles) {
    if (t == "Headline") continue;  // the HTML's headline is a box, not a section
    EXPECT_NE(html.find("<h2>" + t + "</h2>"), std::string::npos) << t;
  }
  EXPECT_NE(html.find("Flagged: bimodal (two clusters)."), std::string::npos);
  EXPECT_NE(html.find("<b>effective</b>: "), std::string::npos);
  EXPECT_NE(html.find("<code>kopt iter branch</code>"), std::string::npos);
}

// Every label of report.html's charts lies inside its chart, at 6.5 px a character of their
// 11 px font (generous for digits and lower case): the issue found an axis label clipped.
TEST_F(RunReports, ChartLabelsLieInsideTheirCharts) {
  std::string html = report_html(load_run_report(run()));
  static const std::regex attr(R"re(([a-z-]+)="([^"]*)")re");
  int svgs = 0, labels = 0;
  for (std::size_t at = html.find("<svg "); at != std::string::npos;
       at = html.find("<svg ", at + 1)) {
    ++svgs;
    std::string svg = html.substr(at, html.find("</svg>", at) - at);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(width="([0-9.]+)")re")));
    double width = std::stod(m[1]);
    std::string id = svg.substr(0, svg.find('>'));
    for (std::size_t t = svg.find("<text "); t != std::string::npos;
         t = svg.find("<text ", t + 1)) {
      std::size_t open_end = svg.find('>', t);
      std::string tag = svg.substr(t, open_end - t);
      std::string text = svg.substr(open_end + 1, svg.find("</text>", t) - open_end - 1);
      for (auto [from, to] : {std::pair{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}})
        for (std::size_t p; (p = text.find(from)) != std::string::npos;)
          text.replace(p, std::string(from).size(), to);
      std::map<std::string, std::string> a;
      for (auto it = std::sregex_iterator(tag.begin(), tag.end(), attr);
           it != std::sregex_iterator(); ++it)
        a[(*it)[1]] = (*it)[2];
      double x = std::stod(a.at("x")) + (a.contains("dx") ? std::stod(a["dx"]) : 0);
      std::size_t chars = 0;
      for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
      double w = 6.5 * static_cast<double>(chars);
      std::string anchor = a.contains("text-anchor") ? a["text-anchor"] : "start";
      double left = anchor == "end" ? x - w : anchor == "middle" ? x - w / 2 : x;
      EXPECT_GE(left, 0) << id << ": '" << text << "' starts left of the chart";
      EXPECT_LE(left + w, width) << id << ": '" << text << "' ends right of the chart";
      ++labels;
    }
  }
  EXPECT_EQ(svgs, 3);
  EXPECT_GT(labels, 10);
}

// A version timed on a loaded machine can be noisier than its median (noise 150 %): its
// error bar would reach below zero, where a log axis has no ticks. The timeline keeps its axis
// above zero and labels it (CI found `kopt optimize` filling its memory with ticks here).
TEST_F(RunReports, ANoiseAboveTheMedianKeepsTheTimelineAxisAboveZero) {
  auto s = load_run_state(run());
  ASSERT_TRUE(s);
  for (auto& v : s->versions) v.noise = 1.5;
  ASSERT_TRUE(save_run_state(run(), *s));
  std::string html = report_html(load_run_report(run()));
  std::size_t at = html.find("id=\"timeline\"");
  ASSERT_NE(at, std::string::npos);
  std::string svg = html.substr(at, html.find("</svg>", at) - at);
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  std::size_t ticks = 0;
  for (std::size_t t = svg.find("stroke=\"#eef1f5\""); t != std::string::npos;
       t = svg.find("stroke=\"#eef1f5\"", t + 1))
    ++ticks;
  EXPECT_GE(ticks, 2u) << svg;
  EXPECT_LE(ticks, 20u) << svg;
}

// A method whose leave-one-out factor is more than the iteration gained is not credited with
// "387 % of the gain": its factor and its share of the log speedup are shown, and the report
// says where the rest went (the issue).
TEST_F(RunReports, AttributionBeyondTheIterationsGainIsExplained) {
  auto s = load_run_state(run());
  ASSERT_TRUE(s);
  VersionRecord& v1 = s->versions[1];
  v1.before_s = 37e-6;  // the iteration gained 37 -> 35 us (1.06x)
  v1.attribution_ms = {{"warp_shuffle_reduction", 0.0084},     // 1.24x alone
                       {"vectorized_global_loads", -0.0007}};  // faster without it
  ASSERT_TRUE(save_run_state(run(), *s));
  RunReport r = load_run_report(run());
  std::string md = report_markdown(r);
  EXPECT_EQ(md.find("of the gain"), std::string::npos) << md;
  EXPECT_NE(md.find("1.06× faster than the champion before it (37 us → 35 us)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("warp_shuffle_reduction 1.24× (share "), std::string::npos) << md;
  EXPECT_NE(md.find("the methods save more than the iteration gained"), std::string::npos) << md;
  EXPECT_NE(md.find("faster without it, it cost time"), std::string::npos) << md;
  EXPECT_NE(md.find("A negative share"), std::string::npos) << md;
  EXPECT_NE(report_html(r).find("the methods save more than the iteration gained"),
            std::string::npos);
  // The shares themselves, on a log scale.
  EXPECT_NEAR(*v1.log_share_pct("warp_shuffle_reduction"),
              100 * std::log(43.4 / 35) / std::log(37.0 / 35), 1e-6);
  EXPECT_LT(*v1.log_share_pct("vectorized_global_loads"), 0);
}

TEST_F(RunReports, MissingMaskedAndDamagedRecordsAreSaidNotFatal) {
  fs::remove(run() / "v1" / "hypothesis.md");
  ASSERT_TRUE(write_text_atomic(run() / "v1" / "sass.json", "{not json"));
  auto s = load_run_state(run());
  ASSERT_TRUE(s);
  ASSERT_TRUE(set_masked(*s, {1}, true, "noisy neighbour"));
  ASSERT_TRUE(save_run_state(run(), *s));
  RunReport r = load_run_report(run());
  std::string md = report_markdown(r);
  for (const char* said : {"v1/hypothesis.md is missing", "v1/sass.json is damaged",
                           "v1 is masked (noisy neighbour)", "no version improved on the baseline"})
    EXPECT_NE(md.find(said), std::string::npos) << said;
  EXPECT_NE(md.find("v1 (masked)"), std::string::npos);

  ASSERT_TRUE(write_text_atomic(run() / "run.json", "{\"schema_version\": 1, \"probl"));
  RunReport broken = load_run_report(run());
  EXPECT_FALSE(broken.state);
  EXPECT_NE(report_markdown(broken).find("run.json cannot be read"), std::string::npos);
  EXPECT_NE(report_html(broken).find("run.json cannot be read"), std::string::npos);
}

TEST_F(RunReports, LeaderboardRanksBySpeedup) {
  test::make_toy_run(m_dir.path() / "toy2", m_dir.path() / "run2");
  auto s = load_run_state(m_dir.path() / "run2");
  ASSERT_TRUE(s);
  ASSERT_TRUE(set_masked(*s, {1}, true, "x"));  // this one has no improvement left
  ASSERT_TRUE(save_run_state(m_dir.path() / "run2", *s));
  std::vector<RunReport> runs{load_run_report(m_dir.path() / "run2"), load_run_report(run())};
  std::string md = leaderboard_markdown(runs);
  auto first = md.find("| 1 |");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(md.substr(first, 60).find("2.86×"), std::string::npos) << md;
  EXPECT_NE(leaderboard_html(runs).find("<td>2.86×</td>"), std::string::npos);
}

}  // namespace
}  // namespace kopt
