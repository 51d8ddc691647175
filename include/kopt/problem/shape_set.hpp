#pragma once
// A problem at many shapes (nvbench's axes): the product of some dims' values, from
// `--axis M=1,16,128` (repeatable) or kopt.toml's [axes]; and what a number over shapes is
// summarized by (best, typical, worst, geometric mean), as the skills report speedups.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt {

struct Shape {
  std::string name;                                        // a [shapes] name; "" for the axes'
  std::vector<std::pair<std::string, std::int64_t>> dims;  // the axes' values, in axis order
  std::string label() const;                               // "M=1 N=4096"
  std::string display() const;                             // "decode (M=1)", or the label
};

// The shapes a command runs at: the product of the --axis flags (NAME=V1,V2,...), else of
// kopt.toml's [axes], axes zipped together (--zip M,N, or [axes] zip) taking their i-th values
// at once; then kopt.toml's named [shapes] (where no --axis is given). Empty when none is
// declared (the problem's own dims). Bad input for an axis that names no dim, has a value that is
// no integer > 0, or is given twice, and for a zip of axes that are not given or differ in length.
Expected<std::vector<Shape>> shape_set(const Problem& p, const std::vector<std::string>& axis_flags,
                                       const std::vector<std::string>& zip_flags = {});

// The weight of a shape in a throughput goal ([goal] weights, by name or by label; 1 if none).
double goal_weight(const Problem& p, const Shape& s);

// A number over shapes: best and worst (by `higher_is_better`), typical (the median) and the
// geometric mean; zeros and negatives are left out (n counts what is in).
struct OverShapes {
  double best = 0, typical = 0, worst = 0, geomean = 0;
  std::size_t n = 0;
};
OverShapes over_shapes(std::vector<double> values, bool higher_is_better = true);

}  // namespace kopt
