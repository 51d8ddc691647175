// A floor that always exists, on the OpenCL backend (label "opencl"; PoCL on the CPU in CI):
// `kopt bench` on a fresh cache measures the device's roofs on first use, stores them, shows
// % of them, and calls a time below their floor an error.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "kopt/core/fs.hpp"
#include "kopt_json.hpp"
#include "opencl_skip.hpp"
#include "private_cache.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

class OpenclRoofs : public test::PrivateCacheTest {
 protected:
  static json kopt(std::vector<std::string> args, int& rc) {
    args.insert(args.begin(), {"--backend", "opencl"});
    return test::kopt_json(std::move(args), rc);
  }
  static std::string example(const char* name) {
    return (test::source_dir() / "examples" / name).string();
  }
  static std::set<std::string> keys(const json& j) {
    std::set<std::string> out;
    for (auto it = j.begin(); it != j.end(); ++it) out.insert(it.key());
    return out;
  }
  static std::set<std::string> documented(const std::string& command) {
    auto text = read_text_file(test::source_dir() / "docs/json/commands.json");
    EXPECT_TRUE(text);
    return text ? keys(json::parse(*text).at(command).at("fields")) : std::set<std::string>{};
  }
};

TEST_F(OpenclRoofs, BenchOnAFreshCacheMeasuresTheRoofsOnFirstUseAndShowsPercentOfThem) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  json j = kopt({"bench", example("vector_add"), "--kernel", "vectorized", "--max-time", "1"}, rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  const std::string source = j["ceilings"];
  EXPECT_FALSE(source.starts_with("none")) << source;
  // A CPU has no entry in the spec table: its roofs can only be measured, and were, now.
  EXPECT_TRUE(std::regex_match(source, std::regex(R"(measured (now|again now) \(.*)"))) << source;
  const json& roofs = j["roofs"];
  EXPECT_EQ(roofs["source"], source);
  EXPECT_EQ(roofs["origin"], "measured_now");
  EXPECT_GT(roofs["bandwidth"]["rate"].get<double>(), 1e8);
  EXPECT_EQ(roofs["bandwidth"]["name"], "dram_copy");
  EXPECT_GT(roofs["compute"]["rate"].get<double>(), 1e8);
  const json& v = j["variants"][0];
  EXPECT_EQ(v["status"], "ok") << v.dump(2);
  EXPECT_GT(v["pct_bandwidth_ceiling"].get<double>(), 0.0);
  EXPECT_GT(v["floor_s"].get<double>(), 0.0);  // the floor applies on a fresh cache
  // The bench document has exactly the fields docs/json/commands.json lists.
  EXPECT_EQ(keys(j), documented("bench"));
  // Stored: the next command uses them and measures nothing.
  json c = kopt({"ceilings"}, rc);
  ASSERT_EQ(rc, 0) << c.dump(2);
  EXPECT_TRUE(c["cached"].get<bool>());
}

TEST_F(OpenclRoofs, ATimeBelowTheFloorIsAnErrorOnAFreshCache) {
  KOPT_SKIP_WITHOUT_OPENCL();
  // vector_add whose cost formula claims 100 times the bytes it moves: no kernel is that fast.
  fs::path dir = m_dir.path() / "lying_vector_add";
  fs::copy(example("vector_add"), dir);
  auto spec = read_text_file(dir / "kopt.toml");
  ASSERT_TRUE(spec);
  const std::string honest = "bytes = \"3 * n * 4\"";
  ASSERT_NE(spec->find(honest), std::string::npos);
  std::string lying = *spec;
  lying.replace(lying.find(honest), honest.size(), "bytes = \"100 * 3 * n * 4\"");
  std::ofstream(dir / "kopt.toml") << lying;
  int rc = -1;
  json j = kopt({"bench", dir.string(), "--kernel", "vectorized", "--max-time", "1"}, rc);
  EXPECT_EQ(rc, 1) << j.dump(2);
  const json& v = j["variants"][0];
  EXPECT_EQ(v["status"], "below_floor") << v.dump(2);
  EXPECT_NE(v["error"].get<std::string>().find("below the roofline floor"), std::string::npos);
  EXPECT_GT(v["pct_bandwidth_ceiling"].get<double>(), 1000.0);
  // On a CPU, roofs are measured once more before a time is called an error.
  EXPECT_TRUE(j["ceilings"].get<std::string>().starts_with("measured again now")) << j["ceilings"];
}

}  // namespace
}  // namespace kopt
