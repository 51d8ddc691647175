// Shapes on PoCL, end to end: kopt.toml's zipped [axes], named [shapes] and a throughput [goal]
// through tune (transfer across shapes, the dispatch table, one configuration for all), and the
// boundary shapes kopt check derives by default.
#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt_json.hpp"
#include "opencl_skip.hpp"
#include "private_cache.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

class OpenclShapes : public test::PrivateCacheTest {
 protected:
  // examples/softmax with its shapes and goal declared.
  fs::path softmax(const std::string& extra) {
    fs::path to = m_dir.path() / "softmax";
    fs::copy(test::source_dir() / "examples/softmax", to, fs::copy_options::recursive);
    auto toml = read_text_file(to / "kopt.toml");
    EXPECT_TRUE(toml && write_text_atomic(to / "kopt.toml", *toml + extra));
    return to;
  }
};

TEST_F(OpenclShapes, TuneTransfersAcrossDeclaredShapesAndPicksOneConfigurationForThroughput) {
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path dir = softmax(
      "\n[axes]\nrows = [16, 32]\ncols = [256, 512]\nzip = [[\"rows\", \"cols\"]]\n"
      "[shapes]\ntall = { rows = 64, cols = 128 }\n[goal]\nkind = \"throughput\"\n"
      "weights = { tall = 2 }\n");
  int rc = -1;
  auto j = test::kopt_json({"--backend", "opencl", "tune", dir.string(), "--kernel", "tuned",
                            "--budget", "4", "--max-time", "0.05", "--screen-samples", "3", "--out",
                            (m_dir.path() / "tune" / "tuned.json").string()},
                           rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_EQ(j["shapes"].size(), 3u) << "two zipped pairs, then the named shape";
  EXPECT_EQ(j["shapes"][1]["label"], "rows=32 cols=512");
  EXPECT_EQ(j["shapes"][2]["name"], "tall");
  EXPECT_DOUBLE_EQ(j["shapes"][2]["weight"].get<double>(), 2.0);
  EXPECT_TRUE(j["shapes"][0]["result"]["transfer_from"].empty());
  EXPECT_FALSE(j["shapes"][1]["result"]["transfer_from"].empty())
      << "the second shape starts from the first one's champion";
  const auto& summary = j["summary"];
  EXPECT_EQ(summary["shape_search"]["mode"], "transfer");
  EXPECT_GT(summary["shape_search"]["evaluations"].get<int>(), 0);
  ASSERT_TRUE(summary["throughput"]["config"].is_object()) << summary.dump(2);
  EXPECT_GE(summary["throughput"]["weighted_s"].get<double>(),
            summary["throughput"]["own_best_weighted_s"].get<double>());
  EXPECT_TRUE(fs::exists(m_dir.path() / "tune" / "tuned.dispatch.hpp"));
}

TEST_F(OpenclShapes, CheckDerivesBoundaryShapesUnlessToldNot) {
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path dir = softmax("");
  int rc = -1;
  auto j = test::kopt_json({"--backend", "opencl", "check", dir.string(), "--dim", "rows=64",
                            "--dim", "cols=256", "--kernel", "tuned"},
                           rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_EQ(j["shape_checks"].size(), 2u) << j["shape_checks"].dump(2);
  EXPECT_EQ(j["shape_checks"][0]["origin"], "boundary (tails)");
  EXPECT_EQ(j["shape_checks"][0]["dims"], "cols=124 rows=31") << "cols % VEC (4) == 0 held";
  EXPECT_EQ(j["shape_checks"][1]["dims"], "cols=4 rows=1");
  EXPECT_TRUE(j["shape_checks"][0]["failed"].empty());
  auto off = test::kopt_json({"--backend", "opencl", "check", dir.string(), "--dim", "rows=64",
                              "--dim", "cols=256", "--kernel", "tuned", "--no-boundary-shapes"},
                             rc);
  ASSERT_EQ(rc, 0);
  EXPECT_TRUE(off["shape_checks"].empty());
}

}  // namespace
}  // namespace kopt
