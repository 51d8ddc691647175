#pragma once
// A CPU device's cold sample: the tensors' own cache lines written back and evicted from every
// level of the host's caches by address (clflushopt, else clflush), so that a timed launch
// reads them from DRAM, as a GPU's does after its L2 is flushed.
//
// A flush buffer rewritten before each sample does not do it on a CPU. The host's last level
// is shared with everything it runs and large (105 MiB on a 2-core CI host), its replacement
// policy keeps lines a stream passes by, and a driver's fill may bypass it with non-temporal
// stores: on one host a kernel of 786 KiB was timed at its hot speed (11.5 us) under the name
// of cold, below the DRAM floor, while a 220 MiB fill cost 50 ms a sample. Evicting the
// tensors' lines costs what they hold (35 us for 512 KiB) and leaves nothing to chance.
//
// The lines can be named only where the device computes in memory kopt owns: a CPU device's
// buffer made with CL_MEM_USE_HOST_PTR over a HostBlock, which the driver uses in place
// (probe_in_place checks that it does).
#include <cstddef>
#include <memory>

#include "handles.hpp"

namespace kopt::opencl {

// Whether this host can evict cache lines by address (x86-64).
bool host_lines_evictable();
// Writes back and evicts every cache line of [p, p + bytes), then fences: the lines are in
// DRAM and in no cache when it returns.
void evict_host_lines(const void* p, std::size_t bytes);

// Page-aligned host memory an OpenCL buffer of a CPU device computes in (CL_MEM_USE_HOST_PTR).
class HostBlock {
 public:
  HostBlock() = default;
  explicit HostBlock(std::size_t bytes);  // empty when the host has no room
  std::byte* data() const { return m_data.get(); }
  std::size_t size() const { return m_size; }
  explicit operator bool() const { return m_data != nullptr; }
  void evict() const {
    if (m_data) evict_host_lines(m_data.get(), m_size);
  }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> m_data;
  std::size_t m_size = 0;
};

// Whether the session's device computes in a CL_MEM_USE_HOST_PTR buffer's own host memory:
// a fill the driver enqueues is seen there without a map, and a map returns that very address.
bool probe_in_place(const Session& s);

}  // namespace kopt::opencl
