#include "nvrtc_api.hpp"

#include <cstdlib>

namespace kopt::cuda {

Expected<const NvrtcApi*> nvrtc_api() {
  return load_once<NvrtcApi>([]() -> Expected<std::unique_ptr<NvrtcApi>> {
    std::vector<std::string> candidates;
    if (const char* v = std::getenv("KOPT_NVRTC"); v && *v) candidates.push_back(v);
    for (const auto& c : toolkit_library_candidates(
             {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}))
      candidates.push_back(c);
    auto lib = DynLib::open(candidates, "NVRTC (libnvrtc.so)");
    if (!lib) return Unexpected(lib.error());
    auto a = std::make_unique<NvrtcApi>();
    a->lib = std::move(*lib);
#define KOPT_RESOLVE(member, proto)                                         \
  a->member = reinterpret_cast<decltype(a->member)>(a->lib.symbol(#proto)); \
  if (!a->member)                                                           \
    return Unexpected(                                                      \
        environment_error("NVRTC at " + a->lib.path() + " lacks " #proto " (too old?)"));
    KOPT_NVRTC_FUNCTIONS(KOPT_RESOLVE)
#undef KOPT_RESOLVE
    a->version(&a->major, &a->minor);
    return a;
  });
}

}  // namespace kopt::cuda
