// Memory as a budget (evaluate/fits.hpp): a problem whose tensors cannot be held once on the
// device is refused before anything is drawn, with its numbers; one that fits is not.
#include "kopt/evaluate/fits.hpp"

#include <gtest/gtest.h>

#include "kopt/problem/loader.hpp"
#include "kopt_binary.hpp"

namespace kopt::evaluate {
namespace {

DeviceInfo gpu_with(std::int64_t bytes) {
  DeviceInfo d;
  d.backend = "cuda";
  d.name = "a GPU of the test";
  d.memory_bytes = bytes;
  return d;
}

TEST(FitsDevice, TensorsLargerThanTheDeviceAreRefusedWithTheirNumbers) {
  auto problem = load_problem(test::source_dir() / "examples/vector_add");
  ASSERT_TRUE(problem) << problem.error().to_string();
  // n = 16777216: a, b and c take 3 x 64 MiB = 192 MiB.
  EXPECT_TRUE(check_fits_device(*problem, gpu_with(std::int64_t{1} << 30)));
  EXPECT_TRUE(check_fits_device(*problem, gpu_with(192 << 20)));  // exactly: fits
  auto refused = check_fits_device(*problem, gpu_with((192 << 20) - 1));
  ASSERT_FALSE(refused);
  const Error& e = refused.error();
  EXPECT_EQ(e.kind, ErrorKind::bad_input);
  EXPECT_EQ(e.file, problem->spec_path.string());
  EXPECT_EQ(e.field, "dims");
  EXPECT_GT(e.line, 0);
  EXPECT_NE(e.message.find("n=16777216"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("a GPU of the test"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("(a 64"), std::string::npos) << e.message;  // the tensors, by size
}

TEST(FitsDevice, AHostCpuDeviceOffersWhatTheHostHasAvailableAndUnknownRoomRefusesNothing) {
  auto problem = load_problem(test::source_dir() / "examples/vector_add");
  ASSERT_TRUE(problem) << problem.error().to_string();
  DeviceInfo cpu;
  cpu.backend = "opencl";
  cpu.device_type = "cpu";
  cpu.memory_bytes = std::int64_t{1} << 34;  // what the OpenCL driver says of the whole host
  cpu.host_memory_available_bytes = 100 << 20;
  EXPECT_EQ(device_room_bytes(cpu), std::uint64_t{100} << 20);
  auto refused = check_fits_device(*problem, cpu);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("has 100.0 MiB available now"), std::string::npos)
      << refused.error().message;
  cpu.host_memory_available_bytes = 0;  // not reported: the driver's number
  EXPECT_TRUE(check_fits_device(*problem, cpu));
  EXPECT_TRUE(check_fits_device(*problem, gpu_with(0)));  // unknown: nothing refused
}

}  // namespace
}  // namespace kopt::evaluate
