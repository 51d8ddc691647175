#pragma once
// The OpenCL timer's verification where the outputs are (output_verifier.hpp): the keyed hash
// of a tensor (measure/keyed_hash.hpp) and the comparison of backend/output_compare_kernel.hpp,
// built once an executor (they need fp64 and 64-bit atomics: where the device lacks them, or
// the build fails, the verifier reads back as before). The golden launch's copies live as long
// as the bench; the reference's outputs copied in stay for the executor's later jobs (by the
// file they came from, the host's copy not held), while kopt's copies stay within a quarter of
// the device's memory (OpenCL tells no free memory).
// Every copy is masked under a key of its own (output_compare_kernel.hpp): the candidate's
// kernel shares the context and could address it.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "kopt/backend/output_verifier.hpp"
#include "prepared_kernel.hpp"

namespace kopt::opencl {

// The executor's part: the kernels, and the reference's outputs on the device.
struct DeviceVerifyCache {
  bool tried = false;
  Program program;  // null where it does not build
  std::string why;  // why not
  struct Expected {
    std::string key;  // the file: its path, size and time (ExpectedOutputs::key)
    std::size_t bytes = 0;
    Buffer buffer;
    std::uint64_t mask = 0;  // the key it is masked under
  };
  std::deque<Expected> expected;  // oldest first
  std::size_t expected_bytes = 0;
};

class DeviceVerify {
 public:
  // `wanted` false: unusable (ok() false), nothing built.
  DeviceVerify(const Session& s, DeviceVerifyCache& cache, bool wanted = true);
  bool ok() const { return m_hash && m_compare; }
  // For variant `k` (its golden copies are kept under its PreparedKernel's address).
  HashTensor hasher(const PreparedKernel& k, const RunJob& job);
  DeviceComparer comparer(const PreparedKernel& k, const RunJob& job);

 private:
  std::optional<RunResult> hash(cl_mem buffer, std::size_t bytes, std::uint64_t key,
                                const std::string& tensor, std::uint64_t& out);
  std::optional<RunResult> compare(cl_mem got, cl_mem expected, std::uint64_t mask,
                                   const JobTensor& t, Tolerance tol, CompareResult& out);
  // dst = src masked under `key` (n elements of `width` bytes), finished.
  cl_int mask_copy(cl_mem src, cl_mem dst, std::size_t n, int width, std::uint64_t key);
  // Whether kopt may hold `bytes` more on the device.
  bool room_for(std::size_t bytes) const;
  const DeviceVerifyCache::Expected* expected_buffer(const ExpectedOutputs& expected,
                                                     std::optional<RunResult>& failure);

  const Session& m_s;
  DeviceVerifyCache& m_cache;
  Kernel m_hash, m_compare, m_mask;
  Buffer m_words;
  std::size_t m_items = 1;
  std::size_t m_budget = 0;
  std::size_t m_kept_bytes = 0;
  struct Kept {
    Buffer buffer;
    std::uint64_t mask = 0;
  };
  std::map<const PreparedKernel*, std::map<std::size_t, Kept>> m_kept;  // golden copies
};

}  // namespace kopt::opencl
