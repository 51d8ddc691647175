// `kopt export --format modelnew` (kopt/problem/export.hpp): one Python file with the problem's
// Model, get_inputs and get_init_inputs (an imported KernelBench problem's model.py verbatim;
// else a Model that computes the problem's reference), and a ModelNew that is a Model (the
// same parameters and buffers, so a state_dict loads into either) whose forward computes the
// results with the kernel.
#include <fmt/format.h>

#include "export_model_parts.hpp"
#include "export_parts.hpp"
#include "kopt/problem/expr_code.hpp"

namespace kopt::detail {
namespace {

// The CUDA source of a torch extension that runs `kernel`: torch's headers first (the
// params' #defines must not reach them), the launch, and the binding once the params are
// undefined again.
Expected<std::pair<std::string, std::string>> extension_sources(const ExportContext& c,
                                                                const KernelSpec& k,
                                                                const ParamPoint& point,
                                                                const std::string& source,
                                                                const std::string& binding) {
  auto launch = cuda_launch_code(c.problem, k, point, source, "kopt_launch");
  if (!launch) return Unexpected(launch.error());
  auto bind = torch_binding(c.problem, "kopt_launch", binding);
  if (!bind) return Unexpected(bind.error());
  std::string undef;
  for (const auto& [name, v] : point) undef += "#undef " + name + "\n";
  std::string cuda =
      "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n"
      "#include <c10/cuda/CUDAGuard.h>\n\n// ---- kopt export: the kernel begins ----\n" +
      *launch + "// ---- kopt export: the kernel ends ----\n" +
      (undef.empty() ? "" : "\n" + undef) + bind->code;
  return std::pair{cuda, bind->declaration};
}

// load_inline's nvcc flags: torch's own undo its -D__CUDA_NO_HALF_OPERATORS__ (and the like),
// which NVRTC, where the kernel was written for, does not set.
std::string flags_list(std::vector<std::string> flags) {
  for (const char* f : {"-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
                        "-U__CUDA_NO_HALF2_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__"})
    flags.push_back(f);
  std::string out;
  for (const auto& f : flags) out += (out.empty() ? "" : ", ") + python_string(f);
  return "[" + out + "]";
}

// The module-level code of an extension: its sources and a function that builds it once.
std::string extension_code(const std::string& prefix, const std::string& module,
                           const std::string& function,
                           const std::pair<std::string, std::string>& sources,
                           const std::vector<std::string>& flags) {
  return fmt::format(
      "{0}_CUDA = {1}\n{0}_CPP = {2}\n{0}_FLAGS = {3}\n\n\n"
      "def {4}():\n"
      "    return _kopt_extension({5}, {6}, {0}_CPP, {0}_CUDA, {0}_FLAGS)\n",
      prefix, python_text(sources.first), python_string(sources.second), flags_list(flags),
      prefix == "_KOPT_KERNEL" ? "_kopt_kernel" : "_kopt_reference", python_string(module),
      python_string(function));
}

}  // namespace

Expected<Export> export_model_new(const ExportContext& c, const ExportSources& src) {
  const Problem& p = c.problem;
  const KernelSpec& k = c.kernel;
  Export out;
  KernelLanguage lang = language_of(k.source);
  out.language = k.abi == KernelSpec::Abi::solve  ? "solve"
                 : lang == KernelLanguage::triton ? "triton"
                                                  : "cuda";
  if (lang == KernelLanguage::opencl)
    return Unexpected(
        refusal(p, {k.where.line, k.where.field + ".source"},
                "kernel '" + k.name + "' is OpenCL (" + k.source.string() +
                    "), which a ModelNew cannot run: export a CUDA or Triton kernel"));
  bool cpp =
      lang != KernelLanguage::triton || (!src.model_py && p.reference.kind == ReferenceKind::cuda);
  auto names = check_code_names(p, cpp);
  if (!names) return Unexpected(names.error());
  ModelPart model;
  if (src.model_py) {
    auto rec = read_kernelbench_record(p, src.reference);
    if (!rec) return Unexpected(rec.error());
    model.record = *rec;
    for (const TensorSpec* t : read_tensors(p)) {
      bool bound = false;
      for (const auto& [kind, v] : rec->forward)
        bound = bound || (kind == "tensor" && v == t->name);
      for (const auto& [m, v] : rec->parameters) bound = bound || v == t->name;
      if (!bound)
        return Unexpected(refusal(p, t->where,
                                  "tensor " + t->name +
                                      " is neither an argument of Model.forward nor one of its "
                                      "parameters (ref.py's FORWARD and PARAMETERS)"));
    }
    model.text = *src.model_py;
  } else {
    auto m = reference_model(c, src);
    if (!m) return Unexpected(m.error());
    model = std::move(*m);
  }

  std::string t = fmt::format(
      "# ModelNew for the problem {} ({}): kernel \"{}\" ({}, entry {}){}, exported by `kopt "
      "export`.\n",
      p.name, p.description.empty() ? p.family : p.description, k.name, k.source.string(), k.entry,
      c.point.empty() ? "" : " at " + point_to_string(c.point));
  t += src.model_py ? "# Model, get_inputs and get_init_inputs are the KernelBench problem's "
                      "model.py, verbatim.\n"
                    : "# Model computes the problem's reference; get_inputs draws its inputs at "
                      "its dims as kopt does.\n";
  t += "# ModelNew is a Model (the same parameters and buffers) whose forward computes the "
       "results\n";
  t += out.language == "triton"
           ? "# with the Triton kernel's run_kernel(**tensors, **dims, **params).\n"
           : "# with the kernel, built on first use by torch.utils.cpp_extension.load_inline.\n";
  t += "# Check and time it: python3 bench/kernelbench_eval.py THIS_FILE THIS_FILE\n\n";
  t += model.text;
  if (!model.text.empty() && model.text.back() != '\n') t += "\n";
  t += "\n\n# ---- kopt export: ModelNew ----\n";
  t += "import importlib.util\nimport math\nimport os\nimport sys\nimport tempfile\n\n"
       "import torch\n\n";
  auto common = python_common(c, model.record);
  if (!common) return Unexpected(common.error());
  t += *common;
  if (!model.code.empty()) t += "\n\n" + model.code;
  std::string call;
  if (out.language == "triton") {
    t += fmt::format("\n\n_KOPT_TRITON = {}\n_KOPT_PARAMS = {{", python_text(src.kernel));
    bool first = true;
    for (const auto& [n, v] : c.point) {
      t += fmt::format("{}{}: {}", first ? "" : ", ", python_string(n), v);
      first = false;
    }
    t += "}\n";
    auto triton = triton_call(c);
    if (!triton) return Unexpected(triton.error());
    t += "\n\n" + *triton;
    call = "        return _kopt_returned(_kopt_run_triton(tensors))\n";
  } else {
    auto sources = extension_sources(c, k, c.point, src.kernel, "kopt_" + c.tag);
    if (!sources) return Unexpected(sources.error());
    t += "\n\n" + extension_code("_KOPT_KERNEL", "kopt_export_" + c.tag, "kopt_" + c.tag, *sources,
                                 cuda_build_flags(c, k));
    call =
        "        results = _kopt_kernel()(*[tensors[n] for n in _KOPT_READS])\n"
        "        return _kopt_returned(dict(zip(_KOPT_RESULTS, results)))\n";
  }
  t += fmt::format(
      "\n\nclass ModelNew(Model):\n"
      "    \"\"\"Model's parameters and buffers; forward computes its results with kernel "
      "\"{}\"{}.\"\"\"\n\n"
      "    def forward(self, *args):\n"
      "        tensors = _kopt_bind(self, args)\n{}",
      k.name, c.point.empty() ? "" : " at " + point_to_string(c.point), call);
  out.files.push_back({"model_new.py", t});
  if (src.model_py)
    out.notes.push_back(
        "ModelNew returns kopt's output shapes: the same as Model's, except a 0-dim result, "
        "which comes back with shape [1]");
  return out;
}

Expected<std::string> reference_extension(const ExportContext& c, const ExportSources& src) {
  const KernelSpec& r = c.problem.reference.kernel;
  auto sources = extension_sources(c, r, {}, src.reference, "kopt_reference_" + c.tag);
  if (!sources) return Unexpected(sources.error());
  return extension_code("_KOPT_REFERENCE", "kopt_export_reference_" + c.tag,
                        "kopt_reference_" + c.tag, *sources, cuda_build_flags(c, r));
}

}  // namespace kopt::detail
