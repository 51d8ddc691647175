// The test binaries' main: GoogleTest's, with one change: a run in which every test skipped
// (and none failed) exits 77, which CTest reports as skipped (SKIP_RETURN_CODE). A test that
// fails is a failure whatever it printed: CTest decides from the exit code, not from the
// output's text.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  if (rc != 0) return rc;
  const ::testing::UnitTest& u = *::testing::UnitTest::GetInstance();
  if (u.failed_test_count() == 0 && u.successful_test_count() == 0 && u.skipped_test_count() > 0)
    return 77;
  return 0;
}
