// BuildCache::build_all: a pool of threads where the compiler allows it, one build per key;
// BuildQueue: builds ahead of need, in order, and waits for the ones asked for only.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "kopt/backend/build_cache.hpp"
#include "kopt/backend/build_queue.hpp"
#include "kopt/core/fs.hpp"

namespace kopt {
namespace {

// Writes a file as its "cubin" after a pause, counting how many compiles run at once.
class SlowCompiler final : public Compiler {
 public:
  explicit SlowCompiler(bool concurrent) : m_concurrent(concurrent) {}
  Expected<std::string> toolkit() override { return std::string("slow 1.0"); }
  Expected<Build> compile(const CompileRequest& r, const std::filesystem::path& cubin) override {
    int now = ++m_running;
    int seen = m_peak.load();
    while (now > seen && !m_peak.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    ++m_compiles;
    --m_running;
    Build b;
    b.ok = r.source_text.find("broken") == std::string::npos;
    if (!b.ok) {
      b.log = "error: broken";
      return b;
    }
    if (auto w = write_text_atomic(cubin, r.source_text); !w) return Unexpected(w.error());
    b.cubin_path = cubin;
    return b;
  }
  bool concurrent() const override { return m_concurrent; }
  int peak() const { return m_peak; }
  int compiles() const { return m_compiles; }

 private:
  bool m_concurrent;
  std::atomic<int> m_running{0}, m_peak{0}, m_compiles{0};
};

std::vector<CompileRequest> requests(int distinct, int copies) {
  std::vector<CompileRequest> out;
  for (int c = 0; c < copies; ++c)
    for (int i = 0; i < distinct; ++i) {
      CompileRequest r;
      r.source_path = "k.cu";
      r.source_text = i == 3 ? "broken" : "kernel " + std::to_string(i);
      r.defines = {{"N", std::to_string(i)}};
      out.push_back(r);
    }
  return out;
}

TEST(BuildAll, CompilesDistinctRequestsOnSeveralThreadsAndEachKeyOnce) {
  TempDir dir("kopt-build-all");
  SlowCompiler compiler(true);
  BuildCache cache(compiler, dir.path());
  auto reqs = requests(8, 2);  // 16 requests, 8 keys
  auto builds = cache.build_all(reqs, 4);
  ASSERT_EQ(builds.size(), reqs.size());
  EXPECT_EQ(compiler.compiles(), 8);
  EXPECT_GT(compiler.peak(), 1);
  EXPECT_LE(compiler.peak(), 4);
  for (std::size_t i = 0; i < builds.size(); ++i) {
    ASSERT_TRUE(builds[i]) << i;
    EXPECT_EQ(builds[i]->ok, i % 8 != 3) << i;
    EXPECT_EQ(builds[i]->key, builds[i % 8]->key);  // a copy carries its key
  }
  EXPECT_NE(builds[0]->key, builds[1]->key);
  // Built once, then from the cache.
  auto again = cache.build_all(reqs, 4);
  EXPECT_EQ(compiler.compiles(), 8);
  EXPECT_TRUE(again[0]->from_cache);
}

TEST(BuildAll, ACompilerThatIsNotConcurrentBuildsOneAtATime) {
  TempDir dir("kopt-build-all");
  SlowCompiler compiler(false);
  BuildCache cache(compiler, dir.path());
  auto builds = cache.build_all(requests(5, 1), 8);
  EXPECT_EQ(compiler.compiles(), 5);
  EXPECT_EQ(compiler.peak(), 1);
  for (const auto& b : builds) EXPECT_TRUE(b);
}

TEST(BuildQueue, BuildsInTheBackgroundAndWaitsOnlyForWhatIsAsked) {
  TempDir dir("kopt-build-queue");
  SlowCompiler compiler(true);
  auto reqs = requests(12, 1);
  {
    BuildQueue queue(compiler, dir.path(), 2);
    queue.add(reqs);
    queue.add({reqs[0], reqs[1]});  // queued once
    std::vector<CompileRequest> first(reqs.begin(), reqs.begin() + 2);
    queue.wait(first);  // the first two, taken first: well before all twelve
    EXPECT_LT(compiler.compiles(), 12);
    BuildCache cache(compiler, dir.path());
    for (const auto& r : first) EXPECT_TRUE(cache.build(r)->from_cache);
    queue.wait(reqs);
    EXPECT_EQ(compiler.compiles(), 12);
    EXPECT_LE(compiler.peak(), 2);
    CompileRequest never;
    never.source_text = "never queued";
    EXPECT_LT(queue.wait({never}), 1.0);  // nothing to wait for
  }
  // Destroyed with work queued: what was queued is dropped, nothing hangs.
  SlowCompiler other(true);
  {
    BuildQueue queue(other, dir.path() / "other", 1);
    queue.add(requests(20, 1));
  }
  EXPECT_LT(other.compiles(), 20);
}

}  // namespace
}  // namespace kopt
