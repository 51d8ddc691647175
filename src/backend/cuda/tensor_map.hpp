#pragma once
// A tensor-map argument (problem/tensor_map.hpp) encoded for the launch: a CUtensorMap of the
// tensor's buffer, made with cuTensorMapEncodeTiled, passed by value.
#include <string>

#include "driver_api.hpp"
#include "kopt/backend/run_job.hpp"

namespace kopt::cuda {

// Encodes `arg`'s tensor map of `tensor`, whose buffer is at `address`, into `out` (128
// bytes, 64-byte aligned). Empty on success; else why not (a stride TMA cannot take, the
// driver's error), which makes the candidate's launch fail.
std::string encode_tensor_map(const DriverApi& api, const ResolvedArg& arg, const JobTensor& tensor,
                              CUdeviceptr address, CUtensorMap& out);

}  // namespace kopt::cuda
