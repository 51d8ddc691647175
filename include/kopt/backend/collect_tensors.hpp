#pragma once
// collect_tensors (run_job.hpp): shared by every executor's run.
#include "kopt/backend/run_job.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"

namespace kopt {

// What the device already settled is not read back: an input whose checksum the executor
// filled in (its hash unchanged by the launch) and an output it compared (RunResult::compared).
template <class Read>
RunResult collect_tensors(const RunJob& job, RunResult result, Read read) {
  for (std::size_t i = 0; i < job.tensors.size(); ++i) {
    const auto& t = job.tensors[i];
    if (t.role == Role::input ? result.input_checksums.count(t.name) > 0
                              : result.compared.count(t.name) > 0)
      continue;
    std::vector<std::byte> host(t.bytes);
    if (std::optional<RunResult> failed = read(i, host)) return *failed;
    if (t.role == Role::input) {
      result.input_checksums[t.name] = hex64(checksum64(host));
    } else if (auto w = write_file_atomic(t.output_path, host); !w) {
      result.status = RunStatus::launch_failed;
      result.error = w.error().to_string();
      return result;
    }
  }
  return result;
}

}  // namespace kopt
