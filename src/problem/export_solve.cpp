// `kopt export --format solve` (kopt/problem/export.hpp): solve.cu under the solve() contract
// of the kernel skills (pointers in kopt.toml's order, const for inputs, then the dims as int),
// with a `// kopt:` line of the shapes so that kopt reads it back exactly; ref.py with
// reference(**kwargs) and the problem's tolerances; README.md with the command that checks it.
#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "export_model_parts.hpp"
#include "kopt/core/text.hpp"
#include "kopt/problem/solve_abi.hpp"

namespace kopt::detail {
namespace {

// `// kopt: x[batch_size, dim] out[batch_size, dim]`
std::string shapes_line(const Problem& p) {
  std::string s = "// kopt:";
  for (const auto& t : p.tensors) {
    std::string shape;
    for (const auto& e : t.shape) shape += (shape.empty() ? "" : ", ") + e.text();
    s += " " + t.name + "[" + shape + "]";
  }
  return s + "\n";
}

// The largest atol and rtol over the results: a tensor's own, else ref.py's module-level ones
// (which kopt applies over the per-dtype defaults), else the per-dtype ones.
Tolerance result_tolerance(const Problem& p, const std::string& ref_py) {
  Tolerance out;
  std::optional<double> atol, rtol;
  if (p.reference.kind == ReferenceKind::python) {
    atol = python_number(ref_py, "atol");
    rtol = python_number(ref_py, "rtol");
  }
  for (const TensorSpec* t : result_tensors(p)) {
    Tolerance tol = p.tolerance_for(*t);
    if (!t->tolerance && (atol || rtol)) tol = {atol.value_or(0.0), rtol.value_or(0.0)};
    out.atol = std::max(out.atol, tol.atol);
    out.rtol = std::max(out.rtol, tol.rtol);
  }
  return out;
}

Expected<std::string> solve_source(const ExportContext& c, const ExportSources& src) {
  const Problem& p = c.problem;
  const KernelSpec& k = c.kernel;
  if (k.abi == KernelSpec::Abi::solve) {
    std::string out = param_defines(c.point) + "\n" + src.kernel;
    if (k.entry == "solve") return out;
    // Another name: a solve() of the same signature that calls it.
    auto sig = parse_solve_signature(src.kernel, k.entry, (p.dir / k.source).string());
    if (!sig) return Unexpected(sig.error());
    std::string params, args;
    for (const auto& s : *sig) {
      params += (params.empty() ? "" : ", ") + s.type + " " + s.name;
      args += (args.empty() ? "" : ", ") + s.name;
    }
    return out + "\n// ---- kopt export: solve() is " + k.entry +
           "() ----\nextern \"C\" void solve(" + params + ") { " + k.entry + "(" + args + "); }\n";
  }
  auto launch = cuda_launch_code(p, k, c.point, src.kernel, "kopt_launch");
  if (!launch) return Unexpected(launch.error());
  std::string params, args;
  for (const auto& t : p.tensors) {
    params += (params.empty() ? "" : ", ") + std::string(t.role == Role::input ? "const " : "") +
              c_type(t.dtype) + "* " + t.name;
    args += (args.empty() ? "" : ", ") + t.name;
  }
  for (const auto& d : p.dims) {
    params += (params.empty() ? "" : ", ") + ("int " + d.name);
    args += (args.empty() ? "" : ", ") + d.name;
  }
  return "#include <cstdio>\n" + *launch +
         "\n// ---- kopt export: the solve() contract (pointers to device memory; waits for the "
         "kernel) ----\n"
         "extern \"C\" void solve(" +
         params + ") {\n  const char* kopt_error = kopt_launch(" + args +
         (args.empty() ? "" : ", ") +
         "0);\n  if (kopt_error) std::fprintf(stderr, \"solve: %s\\n\", kopt_error);\n"
         "  cudaDeviceSynchronize();\n}\n";
}

Expected<std::string> reference_py(const ExportContext& c, const ExportSources& src,
                                   const Tolerance& tol) {
  const Problem& p = c.problem;
  std::string head = fmt::format(
      "# The reference of the problem {} for solve.cu, exported by `kopt export`: "
      "reference(**kwargs)\n# writes the outputs in place; atol and rtol are the problem's "
      "tolerances.\n",
      p.name);
  std::string tols = fmt::format("atol = {}\nrtol = {}\n", tol.atol, tol.rtol);
  if (p.reference.kind == ReferenceKind::python)
    return head + "# problem_ref.py is the problem's ref.py, as it is" +
           (src.model_py ? " (it loads model.py beside it)" : "") +
           ".\nimport importlib.util\nimport os\nimport sys\n\n" + tols +
           fmt::format(
               "\n_spec = importlib.util.spec_from_file_location(\n"
               "    \"kopt_export_ref_{}\", "
               "os.path.join(os.path.dirname(os.path.abspath(__file__)), "
               "\"problem_ref.py\"))\n",
               c.tag) +
           "_ref = importlib.util.module_from_spec(_spec)\nsys.modules[_spec.name] = _ref\n"
           "_spec.loader.exec_module(_ref)\n\n\n"
           "def reference(**kwargs):\n    _ref.reference(**kwargs)\n\n\n"
           "for _name in (\"setup_baseline\", \"baseline\"):  # kopt bench --vs-torch times them\n"
           "    if hasattr(_ref, _name):\n        globals()[_name] = getattr(_ref, _name)\n";
  if (p.reference.kind != ReferenceKind::cuda)
    return Unexpected(refusal(p, {p.reference.kernel.where.line, "reference.kind"},
                              "a C++ reference on the CPU (kind = \"cpp\") cannot be exported: "
                              "give the problem a ref.py (kind = \"python\") or a CUDA reference"));
  auto common = python_common(c, {});
  if (!common) return Unexpected(common.error());
  auto ext = reference_extension(c, src);
  if (!ext) return Unexpected(ext.error());
  return head + "# The CUDA reference (" + p.reference.kernel.source.string() +
         ") runs through torch.utils.cpp_extension.load_inline.\n"
         "import importlib.util\nimport math\nimport os\nimport sys\nimport tempfile\n\n"
         "import torch\n\n" +
         tols + "\n" + *common + "\n\n" + *ext +
         "\n\ndef reference(**kwargs):\n"
         "    # kopt may pass an f32 problem's tensors in f64 (its fp64 reference) and on the CPU\n"
         "    # (kopt init's probe of what reference() writes): the kernel takes kopt.toml's "
         "dtypes, on the GPU\n"
         "    reads = [kwargs[n].to(device=\"cuda\", dtype=_KOPT_DTYPES[n]).contiguous() for n in "
         "_KOPT_READS]\n"
         "    for name, value in zip(_KOPT_RESULTS, _kopt_reference()(*reads)):\n"
         "        kwargs[name].copy_(value)  # back where kopt's tensor lives\n";
}

}  // namespace

Expected<Export> export_solve(const ExportContext& c, const ExportSources& src) {
  const Problem& p = c.problem;
  const KernelSpec& k = c.kernel;
  Export out;
  out.language = k.abi == KernelSpec::Abi::solve ? "solve" : "cuda";
  if (language_of(k.source) != KernelLanguage::cuda)
    return Unexpected(refusal(
        p, {k.where.line, k.where.field + ".source"},
        "kernel '" + k.name + "' is " + std::string(kernel_language_name(language_of(k.source))) +
            " (" + k.source.string() + "); a solve() .cu holds CUDA: export it as a modelnew" +
            (language_of(k.source) == KernelLanguage::triton ? "" : ", or a CUDA kernel")));
  for (const auto& t : p.tensors)
    if (t.role == Role::inout)
      return Unexpected(refusal(p, t.where,
                                "tensor " + t.name +
                                    " is inout, which the solve() contract cannot say (a pointer "
                                    "without const is an output, poisoned before each run)"));
  if (auto n = check_code_names(p, true); !n) return Unexpected(n.error());
  auto body = solve_source(c, src);
  if (!body) return Unexpected(body.error());
  std::string what = fmt::format("kernel \"{}\" of the problem {} ({}, entry {}){}", k.name, p.name,
                                 k.source.string(), k.entry,
                                 c.point.empty() ? "" : " at " + point_to_string(c.point));
  std::string dims = dims_flag(p);
  std::string cu = "// solve.cu: " + what +
                   ",\n// under the solve() contract, exported by `kopt export`. Check it with\n"
                   "//   kopt check solve.cu --ref ref.py " +
                   dims + "\n" + shapes_line(p) + *body;
  out.files.push_back({"solve.cu", cu});
  Tolerance tol = result_tolerance(p, src.reference);
  auto ref = reference_py(c, src, tol);
  if (!ref) return Unexpected(ref.error());
  out.files.push_back({"ref.py", *ref});
  if (p.reference.kind == ReferenceKind::python) {
    out.files.push_back({"problem_ref.py", src.reference});
    if (src.model_py) out.files.push_back({"model.py", *src.model_py});
  }
  std::string flags;
  for (const auto& f : cuda_build_flags(c, k)) flags += " " + f;
  std::string files = "solve.cu (the kernel and its launch), ref.py (reference(**kwargs))";
  if (p.reference.kind == ReferenceKind::python)
    files += std::string(", problem_ref.py (the problem's ref.py") +
             (src.model_py ? ", which loads model.py)" : ")");
  out.files.push_back(
      {"README.md",
       fmt::format("# solve.cu: {what}\n\nExported by `kopt export` from {dir}.\n\n"
                   "Check it, and time it, at the problem's dims:\n\n"
                   "    kopt check solve.cu --ref ref.py {dims}\n"
                   "    kopt bench solve.cu --ref ref.py {dims}\n\n"
                   "Build it as a library (what kopt does): nvcc -O3 --shared -Xcompiler -fPIC "
                   "-o solve.so solve.cu{flags}\n\nFiles: {files}.\n",
                   fmt::arg("what", what), fmt::arg("dir", p.dir.string()), fmt::arg("dims", dims),
                   fmt::arg("flags", flags), fmt::arg("files", files))});
  return out;
}

}  // namespace kopt::detail
