// report.html as a person sees it (label "tool"): headless Chromium renders it to a PNG,
// the DOM holds the three charts, and the console reports no error.
#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/report/run_report.hpp"
#include "toy_run.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(ReportRender, ChromiumDrawsTheChartsWithoutErrors) {
  auto chromium = find_program("chromium");
  if (!chromium) chromium = find_program("chromium-browser");
  if (!chromium) GTEST_SKIP() << "chromium is not installed (Debian package: chromium)";
  TempDir dir("kopt-render");
  test::make_toy_run(dir.path() / "toy", dir.path() / "run");
  fs::path html = dir.path() / "report.html";
  ASSERT_TRUE(write_text_atomic(html, report_html(load_run_report(dir.path() / "run"))));
  SystemCommandRunner runner;
  std::vector<std::string> base{chromium->string(),
                                "--headless",
                                "--no-sandbox",
                                "--disable-gpu",
                                "--user-data-dir=" + (dir.path() / "profile").string(),
                                "--enable-logging=stderr",
                                "--v=0"};
  auto shot = base;
  shot.insert(shot.end(),
              {"--window-size=1200,1600", "--screenshot=" + (dir.path() / "report.png").string(),
               "file://" + html.string()});
  CommandResult s = runner.run(shot, 120s);
  ASSERT_TRUE(s.ok()) << s.err;
  ASSERT_TRUE(fs::exists(dir.path() / "report.png"));
  EXPECT_GT(fs::file_size(dir.path() / "report.png"),
            30000u);  // a rendered page: a blank one is about 9 KB
  auto dump = base;
  dump.insert(dump.end(), {"--dump-dom", "file://" + html.string()});
  CommandResult d = runner.run(dump, 120s);
  ASSERT_TRUE(d.ok()) << d.err;
  for (const char* id : {"id=\"roofline\"", "id=\"timeline\"", "id=\"attribution\""})
    EXPECT_NE(d.out.find(id), std::string::npos) << id;
  EXPECT_NE(d.out.find("<circle"), std::string::npos);
  for (const char* bad : {"Uncaught", "CONSOLE(", "Refused to"})
    EXPECT_EQ(d.err.find(bad), std::string::npos) << d.err;
  if (const char* keep = std::getenv("KOPT_KEEP_SCREENSHOT"))
    fs::copy_file(dir.path() / "report.png", keep, fs::copy_options::overwrite_existing);
}

}  // namespace
}  // namespace kopt
