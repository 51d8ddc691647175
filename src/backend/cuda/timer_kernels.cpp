#include "kopt/backend/cuda/timer_kernels.hpp"

#include "kopt/backend/output_compare_kernel.hpp"
#include "kopt/problem/tensor_draw.hpp"

namespace kopt::cuda {

std::string timer_kernels_source() {
  return std::string(k_timer_helper_source) + output_compare_source(KernelDialect::cuda) +
         k_timer_distance_source + k_draw_prelude_source + draw_element_source() +
         k_draw_kernel_source;
}

}  // namespace kopt::cuda
