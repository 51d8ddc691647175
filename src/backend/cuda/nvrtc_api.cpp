#include "nvrtc_api.hpp"

#include <cstdlib>
#include <memory>
#include <mutex>

namespace kopt::cuda {

Expected<const NvrtcApi*> nvrtc_api() {
  static std::once_flag once;
  static std::unique_ptr<NvrtcApi> api;
  static Error failure;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* v = std::getenv("KOPT_NVRTC"); v && *v) candidates.push_back(v);
    for (const auto& c : toolkit_library_candidates(
             {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}))
      candidates.push_back(c);
    auto lib = DynLib::open(candidates, "NVRTC (libnvrtc.so)");
    if (!lib) {
      failure = lib.error();
      return;
    }
    auto a = std::make_unique<NvrtcApi>();
    a->lib = std::move(*lib);
#define KOPT_RESOLVE(member, proto)                                                        \
  a->member = reinterpret_cast<decltype(a->member)>(a->lib.symbol(#proto));               \
  if (!a->member) {                                                                        \
    failure = environment_error("NVRTC at " + a->lib.path() + " lacks " #proto " (too old?)"); \
    return;                                                                                \
  }
    KOPT_NVRTC_FUNCTIONS(KOPT_RESOLVE)
#undef KOPT_RESOLVE
    a->version(&a->major, &a->minor);
    api = std::move(a);
  });
  if (!api) return Unexpected(failure);
  return api.get();
}

}  // namespace kopt::cuda
