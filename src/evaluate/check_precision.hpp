#pragma once
// kopt check's precision defences (check_run.hpp runs them): the machine code's matrix
// instructions against the problem's precision, an f32 output against the fp64 reference, and
// the widened inputs of the wide seed.
#include <optional>
#include <string>

#include "kopt/core/process.hpp"
#include "kopt/evaluate/checker.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::evaluate {

// KernelCheck::precision (or precision_note, why it was not read) of a built kernel; below the
// problem's precision, the kernel is lower_precision with its error: a failed candidate before
// it runs. The forms are kept beside the binary in the build cache: read once per binary.
void read_machine_precision(const Problem& p, CommandRunner& runner, KernelCheck& kc);

// The kernel's f32 output against the fp64 reference, where the kernel is held to f32
// (nullopt where it declares a lower precision).
std::optional<Fp64Error> fp64_error(const Problem& p, const std::string& kernel,
                                    const HostTensor& got, const HostTensor& exact,
                                    double reference_error);
// The same from the kernel's distance to the fp64 reference, measured where the tensors are
// (the device comparison).
std::optional<Fp64Error> fp64_error(const Problem& p, const std::string& kernel,
                                    const std::string& tensor, double rel_l2,
                                    double reference_error);
std::string fp64_verdict(const Fp64Error& e);

// The problem with every f32/f64 input's normal or uniform init `scale` times wider (mean and
// spread, bounds: the sign of every draw is kept, so a domain such as x > 0 holds); nullopt
// when no input has one.
std::optional<Problem> widened(const Problem& p, double scale);

}  // namespace kopt::evaluate
