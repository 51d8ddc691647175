// The Python around an exported kernel (export_model_parts.hpp).
#include "export_model_parts.hpp"

#include <fmt/format.h>

#include <set>

#include "kopt/problem/expr_code.hpp"

namespace kopt::detail {
namespace {

std::string names_list(const std::vector<const TensorSpec*>& ts) {
  std::string out;
  for (const TensorSpec* t : ts) out += (out.empty() ? "" : ", ") + python_string(t->name);
  return "[" + out + "]";
}

std::string dim_params(const Problem& p) {
  std::string out;
  for (const auto& d : p.dims) out += (out.empty() ? "" : ", ") + d.name;
  return out;
}

std::string number(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// One input drawn as kopt draws it (kopt.toml's init), at the problem's dims, on the CPU.
Expected<std::string> draw(const Problem& p, const TensorSpec& t) {
  std::vector<std::int64_t> shape;
  std::int64_t numel = 1;
  for (const auto& e : t.shape) {
    auto v = e.evaluate_int(p.dim_scope());
    if (!v) return Unexpected(refusal(p, t.where, v.error().message));
    shape.push_back(*v);
    numel *= *v;
  }
  std::string dims = "[" + fmt::format("{}", fmt::join(shape, ", ")) + "]";
  std::string dtype = torch_py_dtype(t.dtype);
  bool narrow = t.dtype == DType::f16 || t.dtype == DType::bf16;
  std::string to = narrow ? ".to(" + dtype + ")" : "";
  std::string make = narrow ? "torch.float32" : dtype;
  const InitSpec& i = t.init;
  switch (i.kind) {
    case InitKind::normal:
      if (!is_float(t.dtype)) break;
      return fmt::format("(torch.randn({}, dtype={}) * {} + {}){}", dims, make, number(i.b),
                         number(i.a), to);
    case InitKind::uniform:
      if (!is_float(t.dtype)) break;
      return fmt::format("(torch.rand({}, dtype={}) * ({} - {}) + {}){}", dims, make, number(i.b),
                         number(i.a), number(i.a), to);
    case InitKind::randint:
      return fmt::format("torch.randint({}, {}, {}, dtype={})", static_cast<std::int64_t>(i.a),
                         static_cast<std::int64_t>(i.b), dims, dtype);
    case InitKind::arange:
      return fmt::format("(torch.arange({}, dtype=torch.float64) * {} + {}).reshape({}).to({})",
                         numel, number(i.b), number(i.a), dims, dtype);
    case InitKind::constant:
      return fmt::format("torch.full({}, {}, dtype={})", dims, number(i.a), dtype);
  }
  return Unexpected(refusal(p, t.where,
                            "an integer tensor drawn from a " +
                                std::string(init_kind_name(i.kind)) + " has no draw kopt exports"));
}

}  // namespace

Expected<void> check_code_names(const Problem& p, bool cpp) {
  static const std::set<std::string> k_python = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield",    "min",
      "max",   "abs",      "int",   "float",  "bool", "math",   "torch"};
  static const std::set<std::string> k_cpp = {
      "int",      "float",     "double",   "char",     "long",   "short",   "unsigned",  "signed",
      "bool",     "void",      "auto",     "const",    "static", "return",  "if",        "else",
      "for",      "while",     "do",       "switch",   "case",   "default", "break",     "continue",
      "new",      "delete",    "this",     "class",    "struct", "union",   "enum",      "template",
      "typename", "namespace", "using",    "operator", "sizeof", "true",    "false",     "inline",
      "extern",   "volatile",  "register", "goto",     "public", "private", "protected", "virtual",
      "friend",   "explicit",  "mutable",  "and",      "or",     "not",     "xor",       "dim3",
      "std",      "torch",     "at",       "c10"};
  auto check = [&](const std::string& name, const SourceRef& where,
                   const char* what) -> Expected<void> {
    if (name.rfind("kopt_", 0) == 0 || name.rfind("_kopt", 0) == 0 || k_python.count(name) ||
        (cpp && k_cpp.count(name)))
      return Unexpected(refusal(p, where,
                                std::string(what) + " '" + name +
                                    "' is a name the exported code uses itself: rename it"));
    return {};
  };
  for (const auto& d : p.dims)
    if (auto r = check(d.name, d.where, "the dim"); !r) return r;
  for (const auto& t : p.tensors)
    if (auto r = check(t.name, t.where, "the tensor"); !r) return r;
  return {};
}

Expected<ModelPart> reference_model(const ExportContext& c, const ExportSources& src) {
  const Problem& p = c.problem;
  ModelPart m;
  for (const TensorSpec* t : read_tensors(p)) m.record.forward.emplace_back("tensor", t->name);
  for (const TensorSpec* t : result_tensors(p)) m.record.outputs.push_back(t->name);
  std::string forward;
  if (p.reference.kind == ReferenceKind::python) {
    m.code = fmt::format("_KOPT_REFERENCE_PY = {}\n", python_text(src.reference));
    forward = fmt::format(
        "        dims = _kopt_prepare(tensors)\n"
        "        reference = _kopt_module(\"kopt_reference_{}\", _KOPT_REFERENCE_PY).reference\n"
        "        reference(**dict(dims, **tensors))\n"
        "        return _kopt_returned({{n: tensors[n] for n in _KOPT_RESULTS}})\n",
        c.tag);
  } else if (p.reference.kind == ReferenceKind::cuda) {
    auto ext = reference_extension(c, src);
    if (!ext) return Unexpected(ext.error());
    m.code = *ext;
    forward =
        "        results = _kopt_reference()(*[tensors[n] for n in _KOPT_READS])\n"
        "        return _kopt_returned(dict(zip(_KOPT_RESULTS, results)))\n";
  } else {
    return Unexpected(refusal(p, {p.reference.kernel.where.line, "reference.kind"},
                              "a C++ reference on the CPU (kind = \"cpp\") cannot be exported: "
                              "give the problem a ref.py (kind = \"python\") or a CUDA reference"));
  }
  std::string inputs;
  for (const TensorSpec* t : read_tensors(p)) {
    auto d = draw(p, *t);
    if (!d) return Unexpected(d.error());
    inputs += fmt::format("        {},  # {}\n", *d, t->name);
  }
  m.text = fmt::format(
      "import torch\nimport torch.nn as nn\n\n\n"
      "class Model(nn.Module):\n"
      "    \"\"\"The problem's reference ({}) on kopt's tensors, forward's arguments in "
      "kopt.toml's order.\"\"\"\n\n"
      "    def forward(self, *args):\n"
      "        tensors = _kopt_bind(self, args)\n{}\n\n"
      "def get_inputs():\n"
      "    \"\"\"The problem's inputs at its dims, drawn as kopt.toml's inits say, on the "
      "CPU.\"\"\"\n"
      "    return [\n{}    ]\n\n\n"
      "def get_init_inputs():\n    return []\n",
      p.reference.kernel.source.string(), forward, inputs);
  return m;
}

Expected<std::string> python_common(const ExportContext& c, const KernelBenchRecord& r) {
  const Problem& p = c.problem;
  std::string t = "_KOPT_READS = " + names_list(read_tensors(p)) +
                  "  # the tensors the kernel reads, in kopt.toml's order\n";
  t += "_KOPT_RESULTS = " + names_list(result_tensors(p)) + "  # and those it writes\n";
  t += "_KOPT_DTYPES = {";
  for (std::size_t i = 0; i < p.tensors.size(); ++i)
    t += (i ? ", " : "") + python_string(p.tensors[i].name) + ": " +
         torch_py_dtype(p.tensors[i].dtype);
  t += "}\n_KOPT_FORWARD = [  # Model.forward's arguments: kopt tensors, or constants\n";
  for (const auto& [kind, v] : r.forward)
    t += fmt::format("    ({}, {}),\n", python_string(kind),
                     kind == "tensor" ? python_string(v) : "None");
  t += "]\n_KOPT_PARAMETERS = {  # the model's parameters and buffers that are kopt tensors\n";
  for (const auto& [m, v] : r.parameters)
    t += fmt::format("    {}: {},\n", python_string(m), python_string(v));
  t += "}\n_KOPT_OUTPUTS = [";
  for (std::size_t i = 0; i < r.outputs.size(); ++i)
    t += (i ? ", " : "") + python_string(r.outputs[i]);
  t += "]  # forward's results\n_KOPT_DIMS = {  # each dim: (tensor, axis) it is read from, or "
       "its fixed value\n";
  for (const DimSource& d : dim_sources(p))
    t += d.tensor.empty() ? fmt::format("    {}: {},\n", python_string(d.dim), d.value)
                          : fmt::format("    {}: ({}, {}),\n", python_string(d.dim),
                                        python_string(d.tensor), d.axis);
  t += "}\n\n\n" + expr_code_helpers(CodeLanguage::python) + "\n\n";
  t += "def _kopt_shapes(" + dim_params(p) +
       "):\n    \"\"\"Every tensor's shape at these dims, as kopt.toml gives it.\"\"\"\n"
       "    return {\n";
  for (const auto& ts : p.tensors) {
    std::string shape;
    for (const auto& e : ts.shape) {
      auto code = python_code(p, e, ts.where, c.point);
      if (!code) return Unexpected(code.error());
      shape += (shape.empty() ? "" : ", ") + *code;
    }
    t += fmt::format("        {}: [{}],\n", python_string(ts.name), shape);
  }
  t += "    }\n\n\n";
  t += R"PY(def _kopt_bind(model, args):
    """kopt's tensors by name: forward's arguments and the model's parameters and buffers."""
    if len(args) != len(_KOPT_FORWARD):
        raise TypeError("forward takes %d arguments, got %d" % (len(_KOPT_FORWARD), len(args)))
    tensors = {name: a for (kind, name), a in zip(_KOPT_FORWARD, args) if kind == "tensor"}
    if _KOPT_PARAMETERS:
        state = dict(model.named_parameters())
        state.update(dict(model.named_buffers()))
        for name, tensor in _KOPT_PARAMETERS.items():  # a 0-dim buffer is a kopt tensor of [1]
            value = state[name].detach()
            tensors[tensor] = value.reshape(1) if value.dim() == 0 else value
    return tensors


def _kopt_prepare(tensors):
    """The dims from the extents of the tensors read (each checked against kopt.toml), and the
    tensors written allocated beside them (an inout cloned: forward leaves its inputs alone)."""
    dims = {d: tensors[s[0]].shape[s[1]] if isinstance(s, tuple) else s for d, s in _KOPT_DIMS.items()}
    shapes = _kopt_shapes(**dims)
    device = None
    for name in _KOPT_READS:
        t = tensors[name]
        if t.dtype != _KOPT_DTYPES[name] or list(t.shape) != shapes[name]:
            raise ValueError("%s is %s %s; kopt.toml says %s %s at %s"
                             % (name, t.dtype, list(t.shape), _KOPT_DTYPES[name], shapes[name], dims))
        tensors[name] = t.contiguous()
        device = device or t.device
    for name in _KOPT_RESULTS:
        if name in _KOPT_READS:
            tensors[name] = tensors[name].clone()
        else:
            tensors[name] = torch.empty(shapes[name], dtype=_KOPT_DTYPES[name], device=device or "cuda")
    return dims


def _kopt_returned(results):
    """forward's results in Model's order: one tensor, or a tuple."""
    outs = [results[name] for name in _KOPT_OUTPUTS]
    return outs[0] if len(outs) == 1 else tuple(outs)


_kopt_modules = {}


def _kopt_module(name, source):
    """A module of `source`, from a file of its own (Triton and inspect read the source there)."""
    if name not in _kopt_modules:
        path = os.path.join(tempfile.mkdtemp(prefix="kopt_export_"), name + ".py")
        with open(path, "w") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _kopt_modules[name] = module
    return _kopt_modules[name]


_kopt_extensions = {}


def _kopt_extension(name, function, cpp, cuda, flags):
    """`function` of a torch extension built from `cuda` by load_inline on first use."""
    if name not in _kopt_extensions:
        from torch.utils.cpp_extension import load_inline
        _kopt_extensions[name] = load_inline(name=name, cpp_sources=[cpp], cuda_sources=[cuda],
                                             functions=[function], extra_cuda_cflags=flags)
    return getattr(_kopt_extensions[name], function)
)PY";
  return t;
}

Expected<std::string> triton_call(const ExportContext& c) {
  const Problem& p = c.problem;
  std::string checks;
  for (const auto& con : c.kernel.constraints) {
    auto code = python_code(p, con.expr, con.where, c.point);
    if (!code) return Unexpected(code.error());
    checks += fmt::format("        ({}, {}),\n", python_string(con.expr.text()), *code);
  }
  std::string t = "def _kopt_constraints(" + dim_params(p) +
                  "):\n    \"\"\"The kernel's constraints (kopt.toml) at these dims.\"\"\"\n"
                  "    return [\n" +
                  checks + "    ]\n\n\n";
  t += fmt::format(R"PY(def _kopt_accepted(fn, kwargs):
    """The keyword arguments `fn` takes: all of them where it has **kwargs."""
    import inspect
    params = inspect.signature(fn).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return kwargs
    return {{k: v for k, v in kwargs.items() if k in {{p.name for p in params}}}}


_kopt_setups = {{}}


def _kopt_run_triton(tensors):
    """The kernel's results: {entry}(**tensors, **dims, **params) as kopt's worker calls it
    (setup(**kwargs) first where the module has one); a returned tensor or dict is the result."""
    dims = _kopt_prepare(tensors)
    for text, holds in _kopt_constraints(**dims):
        if not holds:
            raise ValueError("the constraint '%s' of kernel {kernel} does not hold at %s" % (text, dims))
    module = _kopt_module("kopt_triton_{tag}", _KOPT_TRITON)
    kwargs = dict(dims)
    kwargs.update(_KOPT_PARAMS)
    kwargs.update(tensors)
    setup = getattr(module, "setup", None)
    if callable(setup):
        key = (tuple(sorted(dims.items())), str(tensors[_KOPT_RESULTS[0]].device))
        if key not in _kopt_setups:
            _kopt_setups[key] = setup(**_kopt_accepted(setup, kwargs))
        extra = _kopt_setups[key]
        if isinstance(extra, dict) and not ("inputs" in extra and "outputs" in extra):
            kwargs.update(extra)
    result = module.{entry}(**kwargs)
    results = {{name: tensors[name] for name in _KOPT_RESULTS}}
    if result is not None:
        if not isinstance(result, dict):
            if len(_KOPT_RESULTS) != 1:
                raise ValueError("{entry} returned one value; the results are %s" % _KOPT_RESULTS)
            result = {{_KOPT_RESULTS[0]: result}}
        for name, value in result.items():
            if name not in results or list(value.shape) != list(results[name].shape):
                raise ValueError("{entry} returned %s %s, which is no result of kopt.toml" % (name, list(value.shape)))
            results[name] = value
    return results
)PY",
                   fmt::arg("entry", c.kernel.entry.empty() ? "run_kernel" : c.kernel.entry),
                   fmt::arg("kernel", c.kernel.name), fmt::arg("tag", c.tag));
  return t;
}

}  // namespace kopt::detail
