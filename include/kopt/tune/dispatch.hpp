#pragma once
// A dispatch table over shapes (Triton's autotune key, CUTLASS's heuristics): after `kopt tune
// --axis ...` has a champion per shape, the fewest configurations that keep every shape within
// `tolerance` (2 %) of its own best, judged on what was confirmed at each shape (never on
// screening numbers), written as JSON and as a C++ header that picks a configuration by dims.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kopt/problem/param_space.hpp"

namespace kopt::tune {

// One shape's confirmed measurements: each point with its median time (s).
struct ShapeResults {
  std::vector<std::pair<std::string, std::int64_t>> dims;  // the shape, in axis order
  std::string label;                                       // "M=1 N=4096"
  std::vector<std::pair<ParamPoint, double>> measured;
};

struct DispatchTable {
  std::vector<ParamPoint> configs;  // in the order chosen (the first covers the most shapes)
  struct Row {
    std::string label;
    std::vector<std::pair<std::string, std::int64_t>> dims;
    int config = -1;      // index into configs; -1: nothing was confirmed at this shape
    double seconds = 0;   // the chosen configuration's time there
    double best_s = 0;    // the shape's own best
    bool within = false;  // seconds <= (1 + tolerance) * best_s
  };
  std::vector<Row> rows;
  double tolerance = 0.02;
};

// Greedy set cover: a configuration covers a shape where it was confirmed within tolerance of
// that shape's best; the one covering the most uncovered shapes is taken first (ties: the lower
// geometric mean of time over best where it was confirmed). Each shape then runs the fastest
// chosen configuration confirmed there.
DispatchTable dispatch_table(const std::vector<ShapeResults>& shapes, double tolerance = 0.02);

// The table as a C++ header: `NAME_config(dims...)` returns the configuration of the shape
// with these dims, else of the nearest measured shape (by log distance per dim).
std::string dispatch_header(const DispatchTable& t, const std::string& name,
                            const std::string& provenance);

}  // namespace kopt::tune
