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

namespace {
std::string extensions(KernelLanguage l) {
  return l == KernelLanguage::opencl ? ".cl" : l == KernelLanguage::triton ? ".py" : ".cu";
}
}  // namespace

Expected<void> select_runnable(Problem& p, const std::vector<KernelLanguage>& languages,
                               bool allow_no_kernels) {
  auto runnable = [&](KernelLanguage l) {
    return std::find(languages.begin(), languages.end(), l) != languages.end();
  };
  std::string names, exts;
  for (KernelLanguage l : languages) {
    names += (names.empty() ? "" : " or ") + std::string(kernel_language_name(l));
    exts += (exts.empty() ? "" : ", ") + extensions(l);
  }
  if (p.reference.kind == ReferenceKind::cuda && !runnable(KernelLanguage::cuda))
    return Unexpected(bad_input("the reference is a CUDA kernel, which this device (" + names +
                                    " kernels) cannot run; give a C++ reference (kind = \"cpp\")",
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
    std::optional<std::filesystem::path> chosen;
    for (KernelLanguage l : languages) {
      auto it = std::find_if(k.sources.begin(), k.sources.end(),
                             [&](const auto& s) { return language_of(s) == l; });
      if (it != k.sources.end()) {
        chosen = *it;
        break;
      }
    }
    if (!chosen) {
      p.skipped_kernels.push_back(k.name);
      continue;
    }
    k.source = *chosen;
    kept.push_back(std::move(k));
  }
  p.kernels = std::move(kept);
  if (p.kernels.empty())
    return Unexpected(bad_input("no kernel of this problem has a source in " + names + " (" + exts +
                                    "), which this device runs",
                                p.spec_path.string(), 0, "kernels.source"));
  return {};
}

}  // namespace kopt
