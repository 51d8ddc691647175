#pragma once
// Element-by-element comparison of an output against its reference (pure functions).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kopt/problem/problem.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt {

struct Mismatch {
  std::size_t flat = 0;
  std::vector<std::int64_t> index;
  double got = 0.0;
  double expected = 0.0;
};

struct CompareResult {
  std::string tensor;
  std::size_t numel = 0;
  Tolerance tolerance;
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;  // over elements whose reference is non-zero
  double rel_l2_err = 0.0;   // ||got - ref||_2 / ||ref||_2 over finite pairs
  std::size_t mismatches = 0;
  std::vector<Mismatch> first_mismatches;
  std::size_t nan_count = 0;  // in the output
  std::size_t inf_count = 0;  // in the output
  std::size_t unwritten = 0;  // output elements still holding the poison pattern
  bool passed = false;
};

// ||got - exact||_2 / ||exact||_2 over the elements finite in both, whatever their dtypes (an
// f32 output against an fp64 reference); -1 when the counts differ or nothing is finite.
double relative_l2(const HostTensor& got, const HostTensor& exact);
// sqrt(mean(x^2)) over the finite elements; 0 when there are none.
double rms(const HostTensor& t);
// An element matches when |got - ref| <= atol + rtol * |ref| (NaN matches NaN, an infinity
// matches the same infinity). Both tensors must have the same dtype and element count.
CompareResult compare_tensors(const HostTensor& got, const HostTensor& expected, Tolerance tol,
                              std::size_t max_reported = 5);

}  // namespace kopt
