// compute-sanitizer through `kopt check --sanitize` on the GPU (label "gpu"): a shared-memory
// race that gives the right answer and an out-of-bounds read inside the allocation's slack both
// pass the ordinary check and are caught; the honest kernel is clean. Where the device or the
// tool refuses, the check says unverifiable (exit 3), never passed.
#include <gtest/gtest.h>

#include "gpu_skip.hpp"
#include "kopt/core/process.hpp"
#include "kopt/tools/tool_probe.hpp"
#include "kopt_json.hpp"
#include "private_cache.hpp"

namespace kopt {
namespace {
using nlohmann::json;

const json* kernel(const json& report, const std::string& name) {
  for (const auto& k : report["kernels"])
    if (k["kernel"] == name) return &k;
  return nullptr;
}

const json* tool(const json& k, const std::string& name) {
  for (const auto& t : k["sanitizer"]["tools"])
    if (t["tool"] == name) return &t;
  return nullptr;
}

class Sanitize : public test::PrivateCacheTest {};

TEST_F(Sanitize, ARaceAndASlackReadThatPassTheCheckAreFound) {
  KOPT_SKIP_WITHOUT_GPU();
  SystemCommandRunner runner;
  if (!probe_tool(runner, "compute-sanitizer").found) GTEST_SKIP() << "no compute-sanitizer";
  int rc = -1;
  json j = test::kopt_json({"--backend", "cuda", "check",
                            (test::source_dir() / "tests/fixtures/problems/sanitize").string(),
                            "--seeds", "2", "--sanitize", "memcheck,racecheck"},
                           rc);
  EXPECT_EQ(rc, 1) << j.dump(2);
  const json* honest = kernel(j, "honest");
  const json* racy = kernel(j, "racy");
  const json* oob = kernel(j, "oob_in_slack");
  ASSERT_TRUE(honest && racy && oob) << j.dump(2);
  // All three give the right answer.
  for (const json* k : {honest, racy, oob}) EXPECT_EQ((*k)["status"], "passed") << k->dump(2);
  EXPECT_EQ((*honest)["sanitizer"]["verdict"], "clean") << honest->dump(2);

  EXPECT_EQ((*racy)["sanitizer"]["verdict"], "findings") << racy->dump(2);
  const json* race = tool(*racy, "racecheck");
  ASSERT_TRUE(race);
  ASSERT_EQ((*race)["status"], "findings") << race->dump(2);
  std::string kind = (*race)["findings"][0]["kind"];
  EXPECT_NE(kind.find("Race reported between"), std::string::npos) << kind;
  EXPECT_NE((*race)["findings"][0]["location"].get<std::string>().find("kernels.cu:"),
            std::string::npos)
      << race->dump(2);

  EXPECT_EQ((*oob)["sanitizer"]["verdict"], "findings") << oob->dump(2);
  const json* mem = tool(*oob, "memcheck");
  ASSERT_TRUE(mem);
  ASSERT_EQ((*mem)["status"], "findings") << mem->dump(2);
  const json& f = (*mem)["findings"][0];
  EXPECT_NE(f["kind"].get<std::string>().find("Invalid __global__ read"), std::string::npos)
      << f.dump(2);
  EXPECT_EQ(f["location"], "kernels.cu:25") << f.dump(2);
  EXPECT_EQ(f["kernel"], "partner_sum_oob") << f.dump(2);
}

}  // namespace
}  // namespace kopt
