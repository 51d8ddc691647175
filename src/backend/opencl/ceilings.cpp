// OpenclExecutor::ceilings: what the device sustains, measured with its own driver: a
// buffer copy (read + write bytes) and a kernel of independent multiply-add chains; on a CPU
// device, the streaming rate also a short window at a time (a busy host slices its time).
#include "kopt/backend/bench_job.hpp"
#include "prepared_kernel.hpp"

namespace kopt::opencl {
namespace {

// Streaming kernels: a copy and an add (two reads, one write), float4 per work-item.
constexpr const char* k_stream_source = R"(
__kernel void kopt_copy(__global const float4* a, __global float4* c) {
  c[get_global_id(0)] = a[get_global_id(0)];
}
__kernel void kopt_add(__global const float4* a, __global const float4* b, __global float4* c) {
  c[get_global_id(0)] = a[get_global_id(0)] + b[get_global_id(0)];
}
)";

constexpr const char* k_fma_source = R"(
__kernel void kopt_fma(__global float* out, int iters, float b, float c) {
  float8 a0 = (float8)(get_global_id(0) * 1e-9f), a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f;
  float8 a4 = a0 + 4.0f, a5 = a0 + 5.0f, a6 = a0 + 6.0f, a7 = a0 + 7.0f;
  for (int i = 0; i < iters; ++i) {
    a0 = mad(a0, b, c); a1 = mad(a1, b, c); a2 = mad(a2, b, c); a3 = mad(a3, b, c);
    a4 = mad(a4, b, c); a5 = mad(a5, b, c); a6 = mad(a6, b, c); a7 = mad(a7, b, c);
  }
  float8 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7;
}
)";

// Seconds of each of `samples` runs of `enqueue` (which returns its event) after `warmup`.
template <class Enqueue>
Expected<std::vector<double>> time_runs(const OpenclApi& api, Enqueue enqueue, int warmup,
                                        int samples) {
  std::vector<double> out;
  for (int i = 0; i < warmup + samples; ++i) {
    cl_event raw = nullptr;
    if (cl_int err = enqueue(&raw); err != CL_SUCCESS)
      return Unexpected(environment_error(cl_error_name(err)));
    Event e(&api, raw);
    if (cl_int err = api.wait_for_events(1, &raw); err != CL_SUCCESS)
      return Unexpected(environment_error(cl_error_name(err)));
    auto sec = event_seconds(api, raw);
    if (!sec || *sec <= 0) return Unexpected(environment_error("no profiling time for the event"));
    if (i >= warmup) out.push_back(*sec);
  }
  return out;
}

// A CPU device shares its cores with everything else the host runs, and a busy host (a
// parallel build, other tests) slices its time: a launch that streams 256 MiB spans many
// slices and measures the host's share of the rate, while a kernel of a few hundred
// microseconds often runs inside one slice at the full rate, and would read as faster than
// the "ceiling". So on a CPU the streaming kernels are also timed a window at a time: launches
// of k_window bytes each (global offset), walking the whole buffer so every window's data come
// from DRAM, after one untimed pass that leaves the caches full of dirty lines (each window
// then pays the write-back of earlier ones, as a timed kernel pays for the flush before it).
// The ceiling is the best window: the rate the device reaches when it has its cores.
constexpr std::size_t k_window = std::size_t{4} << 20;

// One of k_stream_source's kernels with its buffers set: kopt_copy reads a into c, kopt_add
// reads a and b into c.
Kernel stream_kernel(const OpenclApi& api, cl_program program, const char* name, cl_mem a, cl_mem b,
                     cl_mem c) {
  cl_int err = CL_SUCCESS;
  Kernel k(&api, api.create_kernel(program, name, &err));
  if (err != CL_SUCCESS) return Kernel();
  const bool add = std::string(name) == "kopt_add";
  cl_mem args[] = {a, add ? b : c, c};
  for (cl_uint i = 0; i < (add ? 3u : 2u); ++i)
    api.set_kernel_arg(k.get(), i, sizeof(cl_mem), &args[i]);
  return k;
}

Ceiling windowed_ceiling(const Session& s, cl_program program, const char* name, cl_mem a, cl_mem b,
                         cl_mem c, std::size_t bytes) {
  const OpenclApi& api = *s.api;
  const bool add = std::string(name) == "kopt_add";
  const std::string method = std::string(add ? "an add kernel (c = a + b)" : "a copy kernel") +
                             " over float4, " + std::to_string(k_window >> 20) +
                             " MiB windows of " + std::to_string(bytes >> 20) +
                             " MiB buffers (the best window), read + write bytes";
  Kernel k = stream_kernel(api, program, name, a, b, c);
  if (!k || bytes < 4 * k_window)
    return Ceiling{"dram_copy", "B/s", 0, 0, method, "cannot time windows"};
  const std::size_t windows = bytes / k_window, items = k_window / 16;
  std::size_t next = 0;
  auto t = time_runs(
      api,
      [&](cl_event* ev) {
        std::size_t offset = (next++ % windows) * items;
        return api.enqueue_nd_range_kernel(s.queue.get(), k.get(), 1, &offset, &items, nullptr, 0,
                                           nullptr, ev);
      },
      static_cast<int>(windows), static_cast<int>(4 * windows));
  return ceiling_from_times("dram_copy", "B/s", (add ? 3.0 : 2.0) * static_cast<double>(k_window),
                            t, method);
}

// The best streaming rate of three ways to move a buffer: clEnqueueCopyBuffer, a copy
// kernel and an add kernel (bytes read + written). On CPUs the driver's copy is often one
// thread, and stores cost a read for ownership: a kernel that streams two inputs beats a
// plain copy there, so the ceiling is the best the device showed, with its method named.
Ceiling copy_ceiling(const Session& s) {
  const OpenclApi& api = *s.api;
  auto max_alloc = device_value<cl_ulong>(api, s.ref.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  std::size_t bytes =
      std::min<std::size_t>(std::size_t{256} << 20, static_cast<std::size_t>(max_alloc));
  const std::string mib = std::to_string(bytes >> 20) + " MiB";
  Buffer buf[3];
  for (auto& b : buf) {
    cl_int err = CL_SUCCESS;
    b = Buffer(&api, api.create_buffer(s.context.get(), CL_MEM_READ_WRITE, bytes, nullptr, &err));
    if (err != CL_SUCCESS)
      return Ceiling{"dram_copy", "B/s", 0, 0, "streaming " + mib + " buffers", "cannot allocate"};
    cl_uint one = 0x3f800000u;
    api.enqueue_fill_buffer(s.queue.get(), b.get(), &one, sizeof one, 0, bytes, 0, nullptr,
                            nullptr);
  }
  cl_mem a = buf[0].get(), b = buf[1].get(), c = buf[2].get();
  std::vector<Ceiling> tried;
  tried.push_back(ceiling_from_times("dram_copy", "B/s", 2.0 * static_cast<double>(bytes),
                                     time_runs(
                                         api,
                                         [&](cl_event* ev) {
                                           return api.enqueue_copy_buffer(s.queue.get(), a, c, 0, 0,
                                                                          bytes, 0, nullptr, ev);
                                         },
                                         3, 20),
                                     "clEnqueueCopyBuffer of " + mib + ", read + write bytes"));
  BuiltProgram p = build_program(s, k_stream_source, "");
  if (p.status == CL_SUCCESS) {
    const std::size_t global = bytes / 16;
    for (const char* name : {"kopt_copy", "kopt_add"}) {
      Kernel k = stream_kernel(api, p.program.get(), name, a, b, c);
      if (!k) continue;
      bool add = std::string(name) == "kopt_add";
      auto t = time_runs(
          api,
          [&](cl_event* ev) {
            return api.enqueue_nd_range_kernel(s.queue.get(), k.get(), 1, nullptr, &global, nullptr,
                                               0, nullptr, ev);
          },
          3, 20);
      tried.push_back(
          ceiling_from_times("dram_copy", "B/s", (add ? 3.0 : 2.0) * static_cast<double>(bytes), t,
                             std::string(add ? "an add kernel (c = a + b)" : "a copy kernel") +
                                 " over float4, " + mib + ", read + write bytes"));
    }
  }
  if (p.status == CL_SUCCESS && s.info.device_type == "cpu")
    for (const char* name : {"kopt_copy", "kopt_add"})
      tried.push_back(windowed_ceiling(s, p.program.get(), name, a, b, c, bytes));
  Ceiling best = tried.front();
  for (const auto& t : tried)
    if (t.error.empty() && t.best > best.best) best = t;
  return best;
}

Ceiling fma_ceiling(const Session& s) {
  const OpenclApi& api = *s.api;
  const bool gpu = s.info.device_type == "gpu";
  const std::size_t global =
      static_cast<std::size_t>(std::max(s.info.sm_count, 1)) * (gpu ? 2048 : 1024);
  const cl_int iters = gpu ? 1024 : 512;
  std::string method =
      "8 independent float8 mad chains per work-item, " + std::to_string(global) + " work-items";
  BuiltProgram p = build_program(s, k_fma_source, "");
  if (p.status != CL_SUCCESS)
    return Ceiling{"fp32_fma", "FLOP/s", 0, 0, method, "the FMA kernel does not build"};
  cl_int err = CL_SUCCESS;
  Kernel k(&api, api.create_kernel(p.program.get(), "kopt_fma", &err));
  Buffer out(&api, api.create_buffer(s.context.get(), CL_MEM_WRITE_ONLY, global * sizeof(float),
                                     nullptr, &err));
  if (!k || !out)
    return Ceiling{"fp32_fma", "FLOP/s", 0, 0, method, "cannot create the FMA kernel"};
  cl_mem o = out.get();
  float b = 0.999f, c = 0.001f;
  api.set_kernel_arg(k.get(), 0, sizeof o, &o);
  api.set_kernel_arg(k.get(), 1, sizeof iters, &iters);
  api.set_kernel_arg(k.get(), 2, sizeof b, &b);
  api.set_kernel_arg(k.get(), 3, sizeof c, &c);
  std::size_t local = gpu ? 256 : 64;
  auto t = time_runs(
      api,
      [&](cl_event* ev) {
        return api.enqueue_nd_range_kernel(s.queue.get(), k.get(), 1, nullptr, &global, &local, 0,
                                           nullptr, ev);
      },
      // A CPU's launches of ~1 ms: more of them, so that some run while the host is idle
      // (windowed_ceiling says why).
      2, gpu ? 10 : 40);
  return ceiling_from_times("fp32_fma", "FLOP/s", 2.0 * 64 * iters * static_cast<double>(global), t,
                            method);
}

}  // namespace

CeilingsResult OpenclExecutor::ceilings() {
  CeilingsResult r;
  r.clocks_before = m_session->info.clocks;
  r.ceilings.push_back(copy_ceiling(*m_session));
  r.ceilings.push_back(fma_ceiling(*m_session));
  r.clocks_after = m_session->info.clocks;
  return r;
}

}  // namespace kopt::opencl
