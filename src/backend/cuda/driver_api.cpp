#include "driver_api.hpp"

namespace kopt::cuda {

std::string DriverApi::describe(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (get_error_name) get_error_name(r, &name);
  if (get_error_string) get_error_string(r, &text);
  return std::string(name ? name : "CUDA_ERROR_" + std::to_string(static_cast<int>(r))) + ": " +
         (text ? text : "unknown error");
}

Expected<const DriverApi*> driver_api() {
  return load_once<DriverApi>([]() -> Expected<std::unique_ptr<DriverApi>> {
    auto lib = DynLib::open({"libcuda.so.1"}, "CUDA driver (libcuda.so.1)");
    if (!lib) return Unexpected(lib.error());
    auto a = std::make_unique<DriverApi>();
    a->lib = std::move(*lib);
#define KOPT_RESOLVE(member, sym, proto)                                 \
  a->member = reinterpret_cast<decltype(a->member)>(a->lib.symbol(sym)); \
  if (!a->member)                                                        \
    return Unexpected(                                                   \
        environment_error(std::string("the CUDA driver lacks ") + sym + " (too old?)"));
    KOPT_DRIVER_FUNCTIONS(KOPT_RESOLVE)
#undef KOPT_RESOLVE
    return a;
  });
}

}  // namespace kopt::cuda
