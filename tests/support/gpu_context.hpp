#pragma once
// Device 0's primary context made current, for a GPU test that calls the driver API itself (kopt's
// own kernels without a worker): the device's arch and SM count; released when it goes.
//   PrimaryContext gpu;
//   ASSERT_TRUE(gpu.ok()) << gpu.error();
#include <string>

#include "backend/cuda/driver_api.hpp"

namespace kopt::cuda {

class PrimaryContext {
 public:
  PrimaryContext() {
    auto loaded = driver_api();
    if (!loaded) {
      m_error = loaded.error().message;
      return;
    }
    m_api = *loaded;
    int major = 0, minor = 0;
    if (m_api->device_get(&m_device, 0) != CUDA_SUCCESS ||
        m_api->device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                    m_device) != CUDA_SUCCESS ||
        m_api->device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                    m_device) != CUDA_SUCCESS ||
        m_api->device_get_attribute(&m_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, m_device) !=
            CUDA_SUCCESS) {
      m_error = "cannot ask device 0 for its compute capability and SM count";
      return;
    }
    m_arch = "sm_" + std::to_string(10 * major + minor);
    CUcontext ctx = nullptr;
    if (m_api->primary_ctx_retain(&ctx, m_device) != CUDA_SUCCESS) {
      m_error = "cannot retain device 0's primary context";
      return;
    }
    m_retained = true;
    if (m_api->ctx_set_current(ctx) != CUDA_SUCCESS) m_error = "cannot make the context current";
  }
  PrimaryContext(const PrimaryContext&) = delete;
  ~PrimaryContext() {
    if (m_retained) m_api->primary_ctx_release(m_device);
  }
  bool ok() const { return m_error.empty(); }
  const std::string& error() const { return m_error; }
  const DriverApi& api() const { return *m_api; }
  const std::string& arch() const { return m_arch; }
  int sm_count() const { return m_sms; }

 private:
  const DriverApi* m_api = nullptr;
  CUdevice m_device = 0;
  bool m_retained = false;
  int m_sms = 0;
  std::string m_arch;
  std::string m_error;
};

}  // namespace kopt::cuda
