// collect_tensors (backend/collect_tensors.hpp): what a run's device already settled is not
// read back; everything else is, as before.
#include "kopt/backend/collect_tensors.hpp"

#include <gtest/gtest.h>

#include <set>

#include "kopt/core/fs.hpp"

namespace kopt {
namespace {

RunJob two_in_two_out(const std::filesystem::path& dir) {
  RunJob job;
  for (const char* name : {"a", "b"})
    job.tensors.push_back({.name = name, .bytes = 8, .role = Role::input});
  for (const char* name : {"y", "z"})
    job.tensors.push_back({.name = name,
                           .bytes = 8,
                           .role = Role::output,
                           .output_path = dir / (name + std::string(".bin"))});
  return job;
}

TEST(CollectTensors, ReadsBackOnlyWhatTheDeviceDidNotSettle) {
  TempDir dir("kopt-collect");
  RunJob job = two_in_two_out(dir.path());
  RunResult settled;
  settled.input_checksums["a"] = "settled-on-the-device";
  settled.compared["y"] = DeviceComparison{};
  std::set<std::size_t> read;
  RunResult r = collect_tensors(job, settled, [&](std::size_t i, std::vector<std::byte>& host) {
    read.insert(i);
    std::fill(host.begin(), host.end(), std::byte{7});
    return std::optional<RunResult>{};
  });
  EXPECT_EQ(read, (std::set<std::size_t>{1, 3}));  // b and z
  EXPECT_EQ(r.input_checksums["a"], "settled-on-the-device");
  EXPECT_EQ(r.input_checksums["b"], hex64(checksum64(std::vector<std::byte>(8, std::byte{7}))));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "y.bin"));
  EXPECT_EQ(std::filesystem::file_size(dir.path() / "z.bin"), 8u);
}

TEST(CollectTensors, WithNothingSettledReadsEveryTensor) {
  TempDir dir("kopt-collect");
  RunJob job = two_in_two_out(dir.path());
  std::size_t reads = 0;
  RunResult r = collect_tensors(job, RunResult{}, [&](std::size_t, std::vector<std::byte>&) {
    ++reads;
    return std::optional<RunResult>{};
  });
  EXPECT_EQ(reads, 4u);
  EXPECT_EQ(r.input_checksums.size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "y.bin"));
}

}  // namespace
}  // namespace kopt
