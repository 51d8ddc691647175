// The memory ceiling, dram_copy: the best rate at which anything moved bytes through DRAM,
// of three ways, each kept in the record under its own name:
//   dram_memcpy       cuMemcpyDtoDAsync over 2 buffers far larger than L2
//   dram_copy_kernel  kopt's streaming kernels over the same buffers: a grid-stride copy of
//                     16-byte loads and stores (plain and __ldcs/__stcs, one and four waves of
//                     blocks filling every SM) and a copy of one 16-byte element per thread
//   dram_copy_cold    a copy and an add timed as kopt bench times a kernel in cold mode: after
//                     its read flush (2 x L2), over buffers of 1 and 2 x L2
// Why the third: on an H100 (2026-11-23) memcpy reached 2.96-3.02 TB/s, the streaming kernels
// 2.86 (grid-stride) and 3.02-3.05 (one element per thread), yet example kernels in kopt
// bench showed 3.16-3.19 TB/s: 106 % of the memcpy ceiling. A kernel of a few L2 sizes, timed
// after a flush that leaves the L2 clean, ends before all its writes reach DRAM; copies timed
// the same way reach 3.2-3.3 TB/s. A ceiling below what correct kernels show makes > 100 %
// normal output, and a kernel that skips work hides inside it.
#include <algorithm>
#include <cstdio>

#include "ceiling_timing.hpp"
#include "kopt/backend/cuda/ceiling_kernels.hpp"

namespace kopt::cuda {
namespace {

constexpr std::size_t k_mib = std::size_t{1} << 20;

std::size_t whole_mib(std::size_t bytes) {
  return std::max(bytes & ~(k_mib - 1), 16 * k_mib);
}

// Each large buffer: far larger than L2 (8x, at least 512 MiB), at most a quarter of memory.
std::size_t large_bytes(const DeviceInfo& dev) {
  std::size_t bytes = std::max<std::size_t>(
      512 * k_mib, 8 * static_cast<std::size_t>(std::max<std::int64_t>(dev.l2_bytes, 0)));
  if (dev.memory_bytes > 0) bytes = std::min(bytes, static_cast<std::size_t>(dev.memory_bytes) / 4);
  return whole_mib(bytes);
}

std::string tbps(double bytes_per_s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f TB/s", bytes_per_s / 1e12);
  return text;
}

std::string mib_text(std::size_t bytes) {
  return std::to_string(bytes / k_mib) + " MiB";
}

// The best error-free figure of `tried`, named `name`; the first error when all failed.
Ceiling best_named(std::vector<Ceiling> tried, const std::string& name) {
  if (tried.empty()) return Ceiling{name, "B/s", 0, 0, "", "nothing was measured"};
  Ceiling best = tried.front();
  for (const auto& c : tried)
    if (c.error.empty() && (!best.error.empty() || c.best > best.best)) best = c;
  best.name = name;
  return best;
}

CUresult launch(const DriverApi& api, CUfunction fn, std::size_t blocks, unsigned threads,
                CUstream stream, void** params) {
  return api.launch_kernel(fn, static_cast<unsigned>(blocks), 1, 1, threads, 1, 1, 0, stream,
                           params, nullptr);
}

class CopyCeilings {
 public:
  CopyCeilings(const DriverApi& api, CUstream stream, const DeviceInfo& dev)
      : m_api(api), m_stream(stream), m_dev(dev) {}

  std::vector<Ceiling> run() {
    const std::size_t bytes = large_bytes(m_dev);
    CUdeviceptr a = alloc(bytes), b = alloc(bytes);
    if (!a || !b)
      return {Ceiling{"dram_copy", "B/s", 0, 0, "", "cannot allocate 2 x " + mib_text(bytes)}};
    m_api.memset_d32(a, 0x3f800000u, bytes / 4);
    m_api.memset_d32(b, 0, bytes / 4);
    m_module = load_builtin_module(m_api, m_dev.arch(), "kopt_stream_copy", k_stream_copy_source,
                                   k_stream_copy_entry);
    std::vector<Ceiling> parts{memcpy_ceiling(a, b, bytes), kernel_ceiling(a, b, bytes),
                               cold_ceiling(a, b)};
    std::size_t won = parts.size();
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (parts[i].error.empty() && (won == parts.size() || parts[i].best > parts[won].best))
        won = i;
    Ceiling best{"dram_copy", "B/s", 0,
                 0,           "",    "no way of copying could be measured: " + parts[0].error};
    if (won < parts.size()) {
      best = parts[won];
      best.name = "dram_copy";
      best.method = parts[won].name + " won: " + parts[won].method;
      for (std::size_t i = 0; i < parts.size(); ++i)
        if (i != won)
          best.method += "; " + parts[i].name +
                         (parts[i].error.empty() ? " reached " + tbps(parts[i].best)
                                                 : " failed: " + parts[i].error);
    }
    parts.insert(parts.begin(), best);
    return parts;
  }

 private:
  CUdeviceptr alloc(std::size_t bytes) {
    CUdeviceptr p = 0;
    if (m_api.mem_alloc(&p, bytes) != CUDA_SUCCESS) return 0;
    m_buffers.emplace_back(&m_api, p);
    return p;
  }
  CUfunction function(const char* entry) {
    CUfunction fn = nullptr;
    if (!m_module || m_api.module_get_function(&fn, m_module->get(), entry) != CUDA_SUCCESS)
      return nullptr;
    return fn;
  }

  Ceiling memcpy_ceiling(CUdeviceptr a, CUdeviceptr b, std::size_t bytes) {
    auto t = time_runs(
        m_api, m_stream, [&] { return m_api.memcpy_dtod_async(b, a, bytes, m_stream); }, 3, 20);
    return ceiling_from_times("dram_memcpy", "B/s", 2.0 * static_cast<double>(bytes), t,
                              "cuMemcpyDtoDAsync of " + mib_text(bytes) + ", read + write bytes");
  }

  Ceiling kernel_ceiling(CUdeviceptr a, CUdeviceptr b, std::size_t bytes) {
    const std::string name = "dram_copy_kernel";
    if (!m_module)
      return Ceiling{name, "B/s", 0, 0, "", "cannot build or load the streaming copy kernels"};
    unsigned long long n = bytes / 16;
    void* params[] = {&a, &b, &n};
    const std::size_t per_sm = static_cast<std::size_t>(
        std::max(1, (m_dev.max_threads_per_sm > 0 ? m_dev.max_threads_per_sm : 2048) / 256));
    const std::size_t sms = static_cast<std::size_t>(std::max(1, m_dev.sm_count));
    std::vector<Ceiling> tried;
    for (const char* entry : {k_stream_copy_entry, k_stream_copy_cs_entry}) {
      CUfunction fn = function(entry);
      if (!fn) continue;
      const bool cs = std::string(entry) == k_stream_copy_cs_entry;
      for (std::size_t waves : {1, 4}) {
        const std::size_t blocks = sms * per_sm * waves;
        auto t = time_runs(
            m_api, m_stream, [&] { return launch(m_api, fn, blocks, 256, m_stream, params); }, 3,
            20);
        tried.push_back(ceiling_from_times(
            name, "B/s", 2.0 * static_cast<double>(bytes), t,
            std::string("a grid-stride copy kernel (") + (cs ? "__ldcs/__stcs" : "plain") +
                " 16-byte loads and stores, 4 in flight per thread, " + std::to_string(blocks) +
                " blocks of 256) of " + mib_text(bytes) + ", read + write bytes"));
      }
    }
    if (CUfunction fn = function(k_copy_flat_entry)) {
      auto t = time_runs(
          m_api, m_stream,
          [&] { return launch(m_api, fn, (n + 1023) / 1024, 1024, m_stream, params); }, 3, 20);
      tried.push_back(
          ceiling_from_times(name, "B/s", 2.0 * static_cast<double>(bytes), t,
                             "a copy kernel of one 16-byte load and store per thread, " +
                                 mib_text(bytes) + ", read + write bytes"));
    }
    if (tried.empty())
      return Ceiling{name, "B/s", 0, 0, "", "the streaming copy kernels have no entry points"};
    return best_named(tried, name);
  }

  // As kopt bench times a cold sample: kopt's read flush of 2 x L2 before each run.
  Ceiling cold_ceiling(CUdeviceptr a, CUdeviceptr b) {
    const std::string name = "dram_copy_cold";
    const std::size_t l2 = static_cast<std::size_t>(std::max<std::int64_t>(m_dev.l2_bytes, 0));
    CUfunction flush = function(k_ceiling_flush_entry), copy = function(k_copy_flat_entry),
               add = function(k_add_flat_entry);
    if (l2 == 0) return Ceiling{name, "B/s", 0, 0, "", "the L2 size is unknown"};
    if (!flush || !copy || !add)
      return Ceiling{name, "B/s", 0, 0, "", "cannot build or load the streaming kernels"};
    const std::size_t flush_bytes = whole_mib(2 * l2);
    CUdeviceptr f = alloc(flush_bytes), c = alloc(whole_mib(2 * l2)), sink = alloc(16);
    if (!f || !c || !sink)
      return Ceiling{name, "B/s", 0, 0, "", "cannot allocate the flush and output buffers"};
    m_api.memset_d32(f, 0x9e3779b9u, flush_bytes / 4);
    m_api.memset_d32(c, 0, whole_mib(2 * l2) / 4);
    unsigned long long flush_n = flush_bytes / 16;
    void* flush_params[] = {&f, &flush_n, &sink};
    const std::size_t flush_blocks = static_cast<std::size_t>(std::max(1, m_dev.sm_count)) * 8;
    auto before = [&] { return launch(m_api, flush, flush_blocks, 256, m_stream, flush_params); };
    std::vector<Ceiling> tried;
    for (std::size_t size : {whole_mib(l2), whole_mib(2 * l2)}) {
      unsigned long long n = size / 16;
      const std::size_t blocks = (n + 1023) / 1024;
      void* copy_params[] = {&a, &c, &n};
      void* add_params[] = {&a, &b, &c, &n};
      auto tc = time_runs_after(
          m_api, m_stream, before,
          [&] { return launch(m_api, copy, blocks, 1024, m_stream, copy_params); }, 3, 20);
      tried.push_back(ceiling_from_times(name, "B/s", 2.0 * static_cast<double>(size), tc,
                                         "a copy kernel of " + mib_text(size) +
                                             " timed as kopt bench's cold mode (after a "
                                             "read flush of " +
                                             mib_text(flush_bytes) + "), read + write bytes"));
      auto ta = time_runs_after(
          m_api, m_stream, before,
          [&] { return launch(m_api, add, blocks, 1024, m_stream, add_params); }, 3, 20);
      tried.push_back(ceiling_from_times(name, "B/s", 3.0 * static_cast<double>(size), ta,
                                         "an add kernel (c = a + b) of 3 x " + mib_text(size) +
                                             " timed as kopt bench's "
                                             "cold mode (after a read flush of " +
                                             mib_text(flush_bytes) + "), read + write bytes"));
    }
    return best_named(tried, name);
  }

  const DriverApi& m_api;
  CUstream m_stream;
  const DeviceInfo& m_dev;
  std::vector<DeviceBuffer> m_buffers;
  std::unique_ptr<Module> m_module;
};

}  // namespace

std::vector<Ceiling> copy_ceilings(const DriverApi& api, CUstream stream, const DeviceInfo& dev) {
  return CopyCeilings(api, stream, dev).run();
}

}  // namespace kopt::cuda
