// A failure of the machine is never a candidate's verdict (on PoCL, end to end): under a
// file-size limit (what a full disk looks like to kopt and to the driver's compiler, which
// caches its binaries), `kopt optimize` stops with exit 3 and the limit named, and the same run
// resumed once the limit is lifted measures the starting kernel again instead of repeating the
// failure from its records. kopt's own memory is a budget, not a crash: a problem whose tensors
// the device cannot hold is refused with its numbers before anything is drawn, and kopt's own
// allocation failing (here under an address-space limit) is the machine's failure (exit 3),
// not the reference's.
#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"
#include "opencl_skip.hpp"
#include "private_cache.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

class OpenclEnvironment : public test::PrivateCacheTest {};

TEST_F(OpenclEnvironment, AFileSizeLimitIsTheMachinesFailureAndAResumeMeasuresAgain) {
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path problem = m_dir.path() / "vector_add";
  fs::copy(test::source_dir() / "examples/vector_add", problem, fs::copy_options::recursive);
  std::string optimize =
      test::kopt_binary().string() + " --backend opencl optimize " + problem.string() +
      " --dim n=1048576 --iterations 1 --max-time 0.2 --run " + (m_dir.path() / "run").string();
  CommandResult limited =
      SystemCommandRunner().run({"sh", "-c", "ulimit -f 64 && exec " + optimize}, 600s);
  std::string said = limited.out + limited.err;
  EXPECT_EQ(limited.exit_code, 3) << said;
  EXPECT_EQ(said.find("nothing to optimize from"), std::string::npos)
      << "the machine's limit is not the starting kernel's failure: " << said;
  CommandResult resumed = SystemCommandRunner().run({"sh", "-c", optimize + " --resume"}, 600s);
  said = resumed.out + resumed.err;
  EXPECT_EQ(resumed.exit_code, 0) << said;
  EXPECT_EQ(said.find("File too large"), std::string::npos) << said;
}

TEST_F(OpenclEnvironment, TensorsTheDeviceCannotHoldAreRefusedWithTheirNumbersBeforeAnyRun) {
  KOPT_SKIP_WITHOUT_OPENCL();
  // n = 2^40: three tensors of 4 TiB each, on no machine.
  CommandResult r = SystemCommandRunner().run(
      {test::kopt_binary().string(), "--backend", "opencl", "check",
       (test::source_dir() / "examples/vector_add").string(), "--dim", "n=1099511627776"},
      120s);
  std::string said = r.out + r.err;
  EXPECT_EQ(r.exit_code, 2) << said;
  EXPECT_NE(said.find("kopt.toml:7: dims: at n=1099511627776 its tensors take"), std::string::npos)
      << said;
  EXPECT_NE(said.find("cannot be held even once"), std::string::npos) << said;
  EXPECT_EQ(said.find("reference"), std::string::npos)
      << "refused before the reference ran: " << said;
}

TEST_F(OpenclEnvironment, KoptsOwnOutOfMemoryIsTheMachinesFailureNotTheReferences) {
  KOPT_SKIP_WITHOUT_OPENCL();
  // 3 x 512 MiB of tensors, which the host has, under a 1 GB address-space limit: kopt's own
  // allocation (drawing the inputs) fails.
  std::string check = test::kopt_binary().string() + " --backend opencl check " +
                      (test::source_dir() / "examples/vector_add").string() + " --dim n=134217728";
  CommandResult r =
      SystemCommandRunner().run({"sh", "-c", "ulimit -v 1000000 && exec " + check}, 600s);
  std::string said = r.out + r.err;
  EXPECT_EQ(r.exit_code, 3) << said;
  EXPECT_NE(said.find("ran out of host memory"), std::string::npos) << said;
  EXPECT_EQ(said.find("the reference failed"), std::string::npos) << said;
}

}  // namespace
}  // namespace kopt
