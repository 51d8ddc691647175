#pragma once
// Memory as a budget, not a crash: whether a problem's tensors, at the dims it runs at, fit the
// device at all. Checked before anything is drawn or allocated, so that a problem too large
// for the machine is refused with its numbers instead of failing half-way (an allocation
// refused, a worker killed) or, worse, reading as a failure of its kernels.
#include "kopt/backend/device_info.hpp"
#include "kopt/core/error.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt::evaluate {

// What a device offers a problem's tensors: its memory; on a host CPU (OpenCL) device, what
// the host has available now where the worker reported it. 0: unknown.
std::uint64_t device_room_bytes(const DeviceInfo& device);

// A bad_input error (the problem's kopt.toml, its dims) with the tensors' bytes, the largest
// tensors and the device's room where every tensor once (inputs and outputs, the least any
// run holds) exceeds that room; nothing where it fits or the room is unknown.
Expected<void> check_fits_device(const Problem& p, const DeviceInfo& device);

}  // namespace kopt::evaluate
