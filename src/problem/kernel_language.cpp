#include <algorithm>

#include "kopt/problem/problem.hpp"

namespace kopt {

std::string_view kernel_language_name(KernelLanguage l) {
  switch (l) {
    case KernelLanguage::cuda:
      return "CUDA";
    case KernelLanguage::opencl:
      return "OpenCL";
    case KernelLanguage::triton:
      return "Triton";
  }
  return "?";
}

std::optional<KernelLanguage> kernel_language_of(const std::filesystem::path& source) {
  std::string ext = source.extension().string();
  if (ext == ".cu" || ext == ".cuh") return KernelLanguage::cuda;
  if (ext == ".cl") return KernelLanguage::opencl;
  if (ext == ".py") return KernelLanguage::triton;
  return std::nullopt;
}

KernelLanguage language_of(const std::filesystem::path& source) {
  return kernel_language_of(source).value_or(KernelLanguage::cuda);
}

Expected<void> select_language(Problem& p, KernelLanguage language, bool allow_no_kernels) {
  p.language = language;
  const std::string name(kernel_language_name(language));
  if (p.reference.kind == ReferenceKind::cuda && language == KernelLanguage::opencl)
    return Unexpected(bad_input("the reference is a CUDA kernel, which the " + name +
                                    " backend cannot run; give a C++ reference (kind = \"cpp\")",
                                p.spec_path.string(), p.reference.kernel.where.line,
                                "reference.kind"));
  if (p.kernels.empty()) {
    if (allow_no_kernels) return {};
    return Unexpected(bad_input("the problem has no kernels yet: add a [[kernels]] table",
                                p.spec_path.string(), 0, "kernels"));
  }
  std::vector<KernelSpec> kept;
  p.skipped_kernels.clear();
  for (auto& k : p.kernels) {
    if (k.sources.empty()) k.sources.push_back(k.source);
    auto it = std::find_if(k.sources.begin(), k.sources.end(),
                           [&](const auto& s) { return language_of(s) == language; });
    if (it == k.sources.end()) {
      p.skipped_kernels.push_back(k.name);
      continue;
    }
    k.source = *it;
    kept.push_back(std::move(k));
  }
  p.kernels = std::move(kept);
  if (p.kernels.empty())
    return Unexpected(bad_input("no kernel of this problem has a " + name + " source (" + name +
                                    " sources end in " +
                                    (language == KernelLanguage::opencl   ? ".cl"
                                     : language == KernelLanguage::triton ? ".py"
                                                                          : ".cu") +
                                    ")",
                                p.spec_path.string(), 0, "kernels.source"));
  return {};
}

}  // namespace kopt
