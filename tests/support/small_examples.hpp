#pragma once
// examples/softmax at a sixteenth of its size for PoCL tests of dispatch, tuning and the loop:
// its 2048 x 4096 takes 50-80 ms a launch on a 2-core host.
#include <string>
#include <vector>

namespace kopt::test {

// `args` ("tune", PROBLEM, ...) with the dims inserted after the problem.
inline std::vector<std::string> with_small_softmax(std::vector<std::string> args) {
  args.insert(args.begin() + 2, {"--dim", "rows=512", "--dim", "cols=2048"});
  return args;
}

}  // namespace kopt::test
