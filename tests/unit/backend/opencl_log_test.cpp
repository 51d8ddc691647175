// OpenCL build logs point at the user's file, whatever name the driver gave the source.
#include <gtest/gtest.h>

#include "kopt/backend/opencl/opencl.hpp"

namespace kopt::opencl {
namespace {

TEST(OpenclBuildLog, DriverNamesBecomeTheUsersFile) {
  // PoCL 3.1 (recorded on the CPU machine) and the names other drivers use.
  EXPECT_EQ(rename_source_in_log(
                "error: /root/.cache/pocl/kcache/tempfile_LzyoM5.cl:3:35: use of undeclared "
                "identifier 'x'",
                "ex/kernel.cl"),
            "error: ex/kernel.cl:3:35: use of undeclared identifier 'x'");
  EXPECT_EQ(rename_source_in_log("<kernel>:12:5: error: expected ';'", "k.cl"),
            "k.cl:12:5: error: expected ';'");
  EXPECT_EQ(rename_source_in_log("<source>:1:1: warning: w\n<source>:2:1: error: e", "k.cl"),
            "k.cl:1:1: warning: w\nk.cl:2:1: error: e");
  EXPECT_EQ(rename_source_in_log("no location here", "k.cl"), "no location here");
}

}  // namespace
}  // namespace kopt::opencl
