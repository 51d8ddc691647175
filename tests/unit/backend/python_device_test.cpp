// A Python job must run on its worker's GPU: the UUID the Python worker reports against the one
// kopt's worker set for it (found on two H100s: every Python job ran on the first GPU).
#include <gtest/gtest.h>

#include "kopt/backend/python/python_runner.hpp"

namespace kopt {
namespace {

TEST(PythonDevice, AJobOnAnotherGpuIsRefusedWithBothUuids) {
  const std::string mine = "GPU-703c828c-9e1b-e67d-a4a7-c7a224ee3ec5";
  // torch writes the UUID without "GPU-"; case does not matter.
  EXPECT_EQ(python_device_mismatch(mine, "703c828c-9e1b-e67d-a4a7-c7a224ee3ec5"), "");
  EXPECT_EQ(python_device_mismatch(mine, "GPU-703C828C-9E1B-E67D-A4A7-C7A224EE3EC5"), "");
  std::string why = python_device_mismatch(mine, "e58f2788-45e6-b89b-404d-39bb562201b5");
  EXPECT_NE(why.find("e58f2788-45e6-b89b-404d-39bb562201b5"), std::string::npos) << why;
  EXPECT_NE(why.find(mine), std::string::npos) << why;
  EXPECT_NE(why.find("another device's"), std::string::npos) << why;
  // Nothing to compare: no device chosen (CPU, OpenCL), or a torch that does not say.
  EXPECT_EQ(python_device_mismatch("", "e58f2788-45e6-b89b-404d-39bb562201b5"), "");
  EXPECT_EQ(python_device_mismatch(mine, ""), "");
}

}  // namespace
}  // namespace kopt
