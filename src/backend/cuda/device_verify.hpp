#pragma once
// The CUDA timer's comparison where the outputs are (output_verifier.hpp's DeviceComparer): the
// kernels of backend/output_compare_kernel.hpp in the timer's helper module, golden copies kept
// beside the job's tensors for as long as the bench, and the reference's outputs copied in once
// an executor and kept for its later jobs (a tune's candidates share them; by the file they
// came from, the host's copy not held; at most a quarter of the device), oldest dropped first;
// every copy masked under a key of its own, which only kopt's kernels are given (a candidate's
// kernel in the same context could read or write them). kopt takes device memory for them only
// while what stays free is at least a tenth of the device and 1 GiB (a candidate's own allocations
// come first); past that the verifier reads back and compares on the host as before.
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "kopt/backend/output_verifier.hpp"
#include "timer_helpers.hpp"

namespace kopt::cuda {

// The executor's part: the reference's outputs on the device, oldest first.
struct ExpectedOnDevice {
  struct Entry {
    std::string key;  // the file: its path, size and time (ExpectedOutputs::key)
    std::size_t bytes = 0;
    DeviceBuffer buffer;
    std::uint64_t mask = 0;  // the key it is masked under
  };
  std::deque<Entry> entries;
  std::size_t bytes = 0;
};

class DeviceComparison {
 public:
  // Unusable (ok() false) where the helpers have no comparison kernel or its words cannot be
  // allocated.
  DeviceComparison(const DriverApi& api, const TimerHelpers& helpers, int sm_count,
                   ExpectedOnDevice& cache);
  bool ok() const { return m_words.has_value(); }
  // The comparer of one variant's launch (its golden copies kept under its address), queued on
  // `stream` after what is there.
  DeviceComparer comparer(const PreparedLaunch& launch, CUstream stream);
  // Whether the reference's outputs named `key` (ExpectedOutputs::key) are on the device already.
  bool holds(const std::string& key) const;
  // A run job's comparison (RunJob::compare): job tensor `index` of `launch` against
  // `expected` (kept on the device as the timer's are), with its relative L2 distance, and
  // against `exact` where given (the fp64 reference's plain bytes, on the device for this call
  // only). `out` stays empty where the device has no room for them: the output is then read
  // back and compared on the host.
  std::optional<RunResult> judge(const PreparedLaunch& launch, std::size_t index,
                                 const ExpectedOutputs& expected, const HostTensor* exact,
                                 Tolerance tol, CUstream stream,
                                 std::optional<kopt::DeviceComparison>& out);

 private:
  std::optional<RunResult> compare(CUdeviceptr got, CUdeviceptr expected, std::uint64_t mask,
                                   const JobTensor& t, Tolerance tol, CUstream stream,
                                   CompareResult& out);
  // dst = src masked under `key`: n elements of `width` bytes, queued on `stream`, waited for.
  CUresult mask_copy(CUdeviceptr src, CUdeviceptr dst, std::size_t n, int width, std::uint64_t key,
                     CUstream stream);
  bool room_for(std::size_t bytes) const;
  // The words (`bytes` of `words`, at most k_compare_words of them) set on the device, `kernel`
  // run over n elements with `params` (which point at m_words), and read back into `words`.
  std::optional<RunResult> summed(CUfunction kernel, const char* name, void** params,
                                  unsigned long long n, void* words, std::size_t bytes,
                                  CUstream stream, const std::string& tensor);
  // The relative L2 distance of `got` to `ref` (measure/compare.hpp's, over the elements where
  // both are finite; -1 where none is), by kopt_l2_sums; `key` unmasks ref.
  std::optional<RunResult> relative_l2(CUdeviceptr got, DType got_type, CUdeviceptr ref,
                                       DType ref_type, std::uint64_t key, std::size_t n,
                                       CUstream stream, const std::string& tensor, double& out);
  unsigned blocks_for(unsigned long long n) const;
  // The reference's outputs on the device: 0 where there is no room (compared on the host).
  const ExpectedOnDevice::Entry* expected_on_device(const ExpectedOutputs& expected,
                                                    CUstream stream,
                                                    std::optional<RunResult>& failure);

  const DriverApi& m_api;
  CUfunction m_kernel = nullptr, m_mask = nullptr, m_l2 = nullptr;
  int m_sm_count = 1;
  ExpectedOnDevice& m_cache;
  std::optional<DeviceBuffer> m_words;
  struct Kept {
    DeviceBuffer buffer;
    std::uint64_t mask = 0;
  };
  std::map<const PreparedLaunch*, std::map<std::size_t, Kept>> m_kept;
};

}  // namespace kopt::cuda
