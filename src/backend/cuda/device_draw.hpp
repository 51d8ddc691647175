#pragma once
// A job's seeded inputs drawn where its kernel runs: the timer helpers' kopt_draw_tensor
// (kopt/backend/cuda/timer_kernels.hpp) writes element i of a tensor's recipe straight into its
// buffer, with the bits the host's draw_values gives (src/problem/draw_element.inc is both), so
// no input of a compared run (RunJob::compare) is drawn on the CPU, written to a file and read
// back. The kernel is built in the worker from kopt's own source, with no cache on disk that a
// candidate could write; the inputs' hashes before and after the launch (run_compare.hpp) say
// whether the candidate left them as drawn.
#include "driver_api.hpp"
#include "kopt/backend/bench_job.hpp"
#include "kopt/backend/run_job.hpp"

namespace kopt::cuda {

struct InputDraw {
  CUfunction kernel = nullptr;
  int sm_count = 1;
};

// Queues the draw of `recipe` into `ptr` (`bytes` of its dtype) on `stream`; the caller waits.
// With `mix` (not 0), only the elements kopt_mix_takes(mix, i) chooses are written: drawn over
// another recipe's, the mix of the two that a timer's secret sample runs on.
CUresult draw_on_device(const DriverApi& api, const InputDraw& draw, CUdeviceptr ptr,
                        const DrawRecipe& recipe, std::size_t bytes, CUstream stream,
                        std::uint64_t mix = 0);
// `t`'s recipe into `ptr` (t.bytes), on the legacy stream.
CUresult draw_on_device(const DriverApi& api, const InputDraw& draw, CUdeviceptr ptr,
                        const JobTensor& t);

// Whether `job`'s inputs are drawn on the device: a compared run (job.compare) or one whose
// inputs are judged by their hashes there (job.hash_inputs: a check's CUDA reference) with a
// drawn input; every other run job reads the files the worker writes (DrawnFiles), where a
// host read of its inputs (a host comparison's) finds them.
bool draws_on_device(const RunJob& job);
// Whether a bench's are (every variant's drawn inputs, and its secret seed's): where its timer
// compares on the device (not --verify-on host), which alone reads no input back.
bool draws_on_device(const BenchJob& job);

}  // namespace kopt::cuda
