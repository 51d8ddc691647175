#include "check_precision.hpp"

#include <algorithm>
#include <cstdio>

#include "kopt/core/fs.hpp"
#include "kopt/measure/compare.hpp"
#include "kopt/tools/sass.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;

namespace {

Expected<std::vector<MmaForm>> mma_forms_of(CommandRunner& runner, const Build& b) {
  fs::path kept = b.cubin_path;
  kept += ".mma.json";
  if (auto text = read_text_file(kept)) {
    try {
      if (auto forms = forms_from_json(nlohmann::json::parse(*text))) return *forms;
    } catch (const std::exception&) {  // unreadable: read the binary again
    }
  }
  bool library = b.module_kind == ModuleKind::solve_library;
  auto dis = disassemble(runner, b.cubin_path, library);
  if (!dis) return Unexpected(dis.error());
  auto forms = mma_forms(parse_sass(dis->text));
  (void)write_text_atomic(kept, forms_to_json(forms).dump());
  return forms;
}

}  // namespace

void read_machine_precision(const Problem& p, CommandRunner& runner, KernelCheck& kc) {
  const KernelSpec* k = p.find_kernel(kc.kernel);
  if (!k) return;
  if (is_python(kc.build.module_kind)) {
    kc.precision_note =
        "a Python kernel (Triton, PyTorch), compiled at run time in its own process: its "
        "machine code is not read";
    return;
  }
  if (language_of(k->source) != KernelLanguage::cuda) {
    kc.precision_note = "not a CUDA kernel: no SASS to read";
    return;
  }
  auto forms = mma_forms_of(runner, kc.build);
  if (!forms) {
    kc.precision_note = "machine code not read: " + forms.error().message;
    return;
  }
  kc.precision = judge_precision(std::move(*forms), allowed_precision(p, k));
  if (kc.build.module_kind == ModuleKind::solve_library)
    kc.precision_note =
        "the solve() library's own kernels: a library it calls (cuBLAS, cuDNN) is not read";
  if (kc.precision->below()) {
    kc.status = KernelStatus::lower_precision;
    kc.error = kc.precision->explain();
  }
}

std::optional<Fp64Error> fp64_error(const Problem& p, const std::string& kernel,
                                    const HostTensor& got, const HostTensor& exact,
                                    double reference_error) {
  if (!precision_at_least(allowed_precision(p, p.find_kernel(kernel)).precision, Precision::f32))
    return std::nullopt;  // declared lower: the distance is what it declared
  return fp64_error(p, kernel, got.name, relative_l2(got, exact), reference_error);
}

std::optional<Fp64Error> fp64_error(const Problem& p, const std::string& kernel,
                                    const std::string& tensor, double rel_l2,
                                    double reference_error) {
  if (!precision_at_least(allowed_precision(p, p.find_kernel(kernel)).precision, Precision::f32))
    return std::nullopt;
  Fp64Error e;
  e.tensor = tensor;
  e.rel_l2 = rel_l2;
  e.reference_rel_l2 = reference_error;
  e.bound = std::max(k_fp64_factor * std::max(e.reference_rel_l2, 0.0), k_fp64_floor);
  e.passed = e.rel_l2 >= 0 && e.rel_l2 <= e.bound;
  return e;
}

std::string fp64_verdict(const Fp64Error& e) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "'%s' is %.3g from an fp64 reference (relative L2) where the f32 reference is "
                "%.3g (allowed: %.3g, %g times that or %.3g): a lower-precision computation "
                "(tf32, bf16 or f16 arithmetic; a library call in tf32) that the tolerance let "
                "through. If that precision is acceptable here, say so in kopt.toml: precision "
                "= \"tf32\" (or bf16, ...), for the problem or this kernel",
                e.tensor.c_str(), e.rel_l2, e.reference_rel_l2, e.bound, k_fp64_factor,
                k_fp64_floor);
  return buf;
}

std::optional<Problem> widened(const Problem& p, double scale) {
  Problem w = p;
  bool any = false;
  for (auto& t : w.tensors)
    if (t.role != Role::output && (t.dtype == DType::f32 || t.dtype == DType::f64) &&
        (t.init.kind == InitKind::normal || t.init.kind == InitKind::uniform)) {
      t.init.a *= scale;
      t.init.b *= scale;
      any = true;
    }
  if (!any) return std::nullopt;
  return w;
}

}  // namespace kopt::evaluate
