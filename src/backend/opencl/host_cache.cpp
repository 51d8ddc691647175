#include "host_cache.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kopt::opencl {
namespace {

constexpr std::size_t k_line = 64;    // the smallest line of any x86-64 cache
constexpr std::size_t k_page = 4096;  // PoCL uses a host pointer in place when it is aligned

#if defined(__x86_64__)
__attribute__((target("clflushopt"))) void evict_clflushopt(const char* p, const char* end) {
  for (; p < end; p += k_line) _mm_clflushopt(const_cast<char*>(p));
  _mm_sfence();  // clflushopt is ordered by a store fence
}
void evict_clflush(const char* p, const char* end) {
  for (; p < end; p += k_line) _mm_clflush(p);
  _mm_mfence();
}
bool has_clflushopt() {
  static const bool has = __builtin_cpu_supports("clflushopt");
  return has;
}
#endif

}  // namespace

bool host_lines_evictable() {
#if defined(__x86_64__)
  return true;  // clflush is part of SSE2, which every x86-64 has
#else
  return false;
#endif
}

void evict_host_lines(const void* p, std::size_t bytes) {
#if defined(__x86_64__)
  if (!p || bytes == 0) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(p) & ~(std::uintptr_t{k_line} - 1);
  const char* first = reinterpret_cast<const char*>(begin);
  const char* end = static_cast<const char*>(p) + bytes;
  if (has_clflushopt())
    evict_clflushopt(first, end);
  else
    evict_clflush(first, end);
#else
  (void)p;
  (void)bytes;
#endif
}

void HostBlock::Free::operator()(std::byte* p) const {
  std::free(p);
}

HostBlock::HostBlock(std::size_t bytes) {
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + k_page - 1) / k_page * k_page;
  m_data.reset(static_cast<std::byte*>(std::aligned_alloc(k_page, size)));
  if (m_data) m_size = bytes;
}

bool probe_in_place(const Session& s) {
  if (!host_lines_evictable()) return false;
  const OpenclApi& api = *s.api;
  constexpr std::size_t bytes = k_page;
  HostBlock block(bytes);
  if (!block) return false;
  std::memset(block.data(), 0, bytes);
  cl_int err = CL_SUCCESS;
  Buffer b(&api, api.create_buffer(s.context.get(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes,
                                   block.data(), &err));
  if (err != CL_SUCCESS || !b) return false;
  const cl_uint pattern = 0x6b6f7074u;  // "kopt"
  if (api.enqueue_fill_buffer(s.queue.get(), b.get(), &pattern, sizeof pattern, 0, bytes, 0,
                              nullptr, nullptr) != CL_SUCCESS ||
      api.finish(s.queue.get()) != CL_SUCCESS)
    return false;
  // Seen without a map: the driver wrote the host memory itself, not a copy of it.
  for (std::size_t i = 0; i < bytes; i += sizeof pattern) {
    cl_uint w = 0;
    std::memcpy(&w, block.data() + i, sizeof w);
    if (w != pattern) return false;
  }
  void* mapped = api.enqueue_map_buffer(s.queue.get(), b.get(), CL_TRUE, CL_MAP_READ, 0, bytes, 0,
                                        nullptr, nullptr, &err);
  if (err != CL_SUCCESS || !mapped) return false;
  const bool same = mapped == block.data();
  api.enqueue_unmap_mem_object(s.queue.get(), b.get(), mapped, 0, nullptr, nullptr);
  return api.finish(s.queue.get()) == CL_SUCCESS && same;
}

}  // namespace kopt::opencl
