#pragma once
// Runs jobs on one GPU through the driver API. Lives in the worker process only: the
// orchestrator never holds a GPU context (docs/architecture.md §2).
#include <cstdint>
#include <memory>

#include "kopt/backend/executor.hpp"

namespace kopt::cuda {

class CudaExecutor final : public Executor {
 public:
  // Loads the driver, initializes it and retains the device's primary context.
  static Expected<std::unique_ptr<CudaExecutor>> open(int ordinal);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  Expected<DeviceInfo> device_info() const override;
  // Never throws; a kernel that faults is a RunResult with status fault and fatal == true.
  RunResult run(const RunJob& job) override;
  // A compared run's drawn inputs (backend/cuda/device_draw.hpp), and a bench's compared on
  // the device, where the helpers built.
  bool draws_inputs(const RunJob& job) override;
  bool draws_inputs(const BenchJob& job) override;
  // Samples one kernel, or two interleaved (A B B A ...), with the job's policy.
  BenchResult bench(const BenchJob& job) override;
  // Device-to-device copy bandwidth, fp32 FMA rate, cuBLAS tensor-core rates.
  CeilingsResult ceilings() override;

 private:
  struct State;
  explicit CudaExecutor(std::unique_ptr<State> state);
  // device_info(), asked once and kept.
  Expected<const DeviceInfo*> cached_device_info();
  // Whether the timer helpers have the draw and every kernel of the comparison.
  bool helpers_draw_and_compare();
  std::unique_ptr<State> m_state;
};

// NVML's view of a device's clocks; `nvml_error` says why fields are missing.
Clocks read_clocks(const std::string& pci_bus_id);
// The device's memory in use, every process and context on it included (NVML: what
// nvidia-smi shows), with no context of this process's; an Error where NVML cannot say.
Expected<std::uint64_t> read_memory_used(const std::string& pci_bus_id);
// Device count and driver version without creating a context; an Error when there is no
// usable driver or no device.
struct DriverProbe {
  int device_count = 0;
  int driver_version = 0;
  std::string library_path;
};
Expected<DriverProbe> probe_driver();

}  // namespace kopt::cuda
