#pragma once
// What became of one measured candidate (a kernel at a point, or a PyTorch baseline): the
// status every table, record and decision reads.
#include "kopt/core/enum_names.hpp"

namespace kopt {

enum class VariantStatus {
  ok,              // measured; its numbers are a result
  wrong,           // its output is not the reference's: never timed
  compile_failed,  // it does not build
  run_failed,      // it crashed, hung, or its run could not be made
  below_floor,     // a time faster than the roofline allows: an error, not a result
  inconsistent,    // timed launches did not compute what an untimed launch computes
  unverified,      // its timed samples could not be verified: never a result
  unavailable,     // a baseline this machine lacks (a torch without torch.compile)
  not_run,         // nothing ran it (not asked for, or something before it failed)
  error,           // kopt could not measure it (a lost worker): no verdict on the candidate
};

template <>
struct EnumNames<VariantStatus> {
  static constexpr std::array<std::pair<VariantStatus, std::string_view>, 10> table{{
      {VariantStatus::ok, "ok"},
      {VariantStatus::wrong, "wrong"},
      {VariantStatus::compile_failed, "compile_failed"},
      {VariantStatus::run_failed, "run_failed"},
      {VariantStatus::below_floor, "below_floor"},
      {VariantStatus::inconsistent, "inconsistent"},
      {VariantStatus::unverified, "unverified"},
      {VariantStatus::unavailable, "unavailable"},
      {VariantStatus::not_run, "not_run"},
      {VariantStatus::error, "error"},
  }};
};

}  // namespace kopt
