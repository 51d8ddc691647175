#include <chrono>

#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "prepared_kernel.hpp"

namespace kopt::opencl {

OpenclExecutor::OpenclExecutor(std::unique_ptr<Session> s)
    : m_session(std::move(s)), m_programs(std::make_unique<Programs>()) {}
OpenclExecutor::~OpenclExecutor() = default;

Expected<std::unique_ptr<OpenclExecutor>> OpenclExecutor::open(int ordinal) {
  auto s = open_session(ordinal);
  if (!s) return Unexpected(s.error());
  return std::unique_ptr<OpenclExecutor>(new OpenclExecutor(std::move(*s)));
}

Expected<DeviceInfo> OpenclExecutor::device_info() const {
  return m_session->info;
}

RunResult OpenclExecutor::run(const RunJob& job) {
  const Session& s = *m_session;
  const OpenclApi& api = *s.api;
  RunResult result;
  auto prepared = prepare_kernel(s, *m_programs, job, result);
  if (!prepared) return result;
  cl_event raw = nullptr;
  if (cl_int err = prepared->enqueue(s, &raw); err != CL_SUCCESS)
    return cl_failure(RunStatus::launch_failed, "clEnqueueNDRangeKernel", err);
  Event done(&api, raw);
  if (cl_int err = api.wait_for_events(1, &raw); err != CL_SUCCESS)
    return cl_failure(RunStatus::fault, "clWaitForEvents", err);
  if (auto sec = event_seconds(api, raw)) result.kernel_ms = *sec * 1e3;
  return collect_tensors(job, result, [&](std::size_t i, std::vector<std::byte>& host) {
    return prepared->read(s, i, job.tensors[i], host);
  });
}

}  // namespace kopt::opencl
