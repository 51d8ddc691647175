#include "kernelbench_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "kopt/core/hash.hpp"
#include "kopt/problem/kernelbench.hpp"

namespace kopt::kernelbench_text {
using nlohmann::json;

namespace {

int dtype_bytes(const std::string& d) {
  if (d == "f64" || d == "i64") return 8;
  if (d == "f32" || d == "i32") return 4;
  if (d == "f16" || d == "bf16" || d == "i16") return 2;
  return 1;
}

std::string python_string(const std::string& s) {
  return json(s).dump();
}

// Python: whether a model's weights were loaded from these very tensors, unchanged since
// (_loaded_from), and what to keep of them to tell (_held). Not their id and address: freed with
// one job's tensors, both come back for the next job's, whose weights then went unloaded (an
// honest ModelNew failed on a later seed). A tensor's version counts writes in place.
std::string loaded_from_helpers(const std::string& prefix, const std::string& weakref) {
  return fmt::format(
      "def {0}_loaded_from(held, source):\n"
      "    \"\"\"Whether the weights came from these tensors, unwritten since (see _held).\"\"\"\n"
      "    return held is not None and len(held) == len(source) and all(\n"
      "        r() is t and v == t._version for (r, v), t in zip(held, source))\n\n\n"
      "def {0}_held(source):\n"
      "    \"\"\"Weak references and versions: a freed tensor's id and address come back for "
      "others.\"\"\"\n"
      "    return [({1}.ref(t), t._version) for t in source]\n",
      prefix, weakref);
}

// ref.py's model made on the meta device where torch can (2.0 on): no memory and no random
// draws for weights kopt's tensors replace at once, so a 32768 x 32768 Linear's 4 GiB are held
// once (kopt's tensor), not again for the model's own and again in torch's cache.
constexpr const char* k_made_empty = R"(def _made_empty(make, kw, f64):
    """make() (a model) on the meta device, its parameters kopt's tensors themselves and its
    buffers copies of them (forward may update a buffer); None where torch cannot make it there
    or some of its state would not be kopt's (a tensor attribute, a tied weight): the model is
    then made on the device (_made_on)."""
    try:
        with torch.device("meta"):
            model = make()
    except Exception:  # noqa: BLE001 (torch < 2.0, or an __init__ that needs real tensors)
        return None
    if f64:
        model = model.double()
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    if set(state) != set(PARAMETERS):
        return None
    with torch.no_grad():
        for name, tensor in PARAMETERS.items():
            owner, _, leaf = name.rpartition(".")
            module, target = model.get_submodule(owner), state[name]
            value = kw[tensor].reshape(target.shape)
            if leaf in module._parameters:
                module._parameters[leaf] = torch.nn.Parameter(
                    value if value.dtype == target.dtype else value.to(target.dtype),
                    requires_grad=target.requires_grad)
            else:
                module._buffers[leaf] = value.to(target.dtype, copy=True)
    for module in model.modules():
        held = list(vars(module).values()) + list(module._parameters.values()) + list(module._buffers.values())
        if any(isinstance(v, torch.Tensor) and v.is_meta for v in held):
            return None
    return model


)";

// FORWARD, PARAMETERS, OUTPUTS and BOOL_INPUTS as Python constants, their names prefixed.
std::string constants(const ImportedTensors& t, const std::string& prefix) {
  std::string c = prefix +
                  "FORWARD = [  # Model.forward's arguments, in order: kopt tensors, or "
                  "get_inputs()' constants\n";
  for (const auto& [kind, v] : t.forward)
    c += fmt::format("    ({}, {}),\n", python_string(kind),
                     kind == "tensor" ? python_string(v) : v);
  c += "]\n" + prefix +
       "PARAMETERS = {  # the model's parameters and buffers, loaded from these kopt tensors\n";
  for (const auto& [m, k] : t.parameters)
    c += fmt::format("    {}: {},\n", python_string(m), python_string(k));
  c += "}\n" + prefix + "OUTPUTS = [";
  for (std::size_t i = 0; i < t.outputs.size(); ++i)
    c += (i ? ", " : "") + python_string(t.outputs[i]);
  c += "]\n" + prefix + "BOOL_INPUTS = [";
  for (std::size_t i = 0; i < t.bools.size(); ++i) c += (i ? ", " : "") + python_string(t.bools[i]);
  return c + "]  # u8 tensors of 0 and 1 that forward takes as bool\n";
}

// bytes: every tensor once, equal extents counted ("2 * n * 4" rather than "n * 4 + n * 4").
std::string bytes_formula(const std::vector<TensorOut>& tensors) {
  std::map<int, std::vector<std::pair<std::string, int>>> by_size;
  for (const auto& t : tensors) {
    auto& terms = by_size[dtype_bytes(t.dtype)];
    std::string numel = ShapeNamer::product(t.shape);
    auto same = std::find_if(terms.begin(), terms.end(), [&](auto& x) { return x.first == numel; });
    if (same != terms.end())
      ++same->second;
    else
      terms.emplace_back(numel, 1);
  }
  std::string bytes;
  for (const auto& [size, terms] : by_size) {
    std::string sum;
    for (const auto& [numel, count] : terms)
      sum += (sum.empty() ? "" : " + ") + (count > 1 ? std::to_string(count) + " * " : "") + numel;
    bool several = terms.size() > 1;
    bytes += (bytes.empty() ? "" : " + ") + (several ? "(" + sum + ")" : sum) + " * " +
             std::to_string(size);
  }
  return bytes;
}

}  // namespace

std::string kopt_toml(const std::string& file_name, const json& facts, const ImportedTensors& it,
                      const KernelbenchCost& cost, const ShapeNamer& namer,
                      const std::vector<std::string>& notes) {
  const std::vector<TensorOut>& tensors = it.tensors;
  std::string stem = std::filesystem::path(file_name).stem().string();
  std::string bytes = bytes_formula(tensors);
  std::string t;
  t += fmt::format(
      "# The KernelBench problem {}, imported by `kopt import kernelbench` (torch {}).\n",
      file_name, facts.value("torch", std::string("?")));
  t += "# model.py is the file as it came; ref.py runs its Model on kopt's inputs. Extents are "
       "named\n";
  t += "# after the file's size constants by value: check them before changing a dim with "
       "--dim.\n";
  t += kernelbench_import_stamp() + "\n";
  for (const auto& n : notes) t += "# NOTE: " + n + "\n";
  t += fmt::format("name = {}\n", python_string(stem));
  t += fmt::format("family = {}\n", python_string(cost.family.empty() ? stem : cost.family));
  t += fmt::format("description = {}\n\n", python_string("KernelBench " + stem));
  t += "[dims]\n";
  for (const auto& [n, v] : namer.used()) t += fmt::format("{} = {}\n", n, v);
  for (const auto& ts : tensors) {
    t += "\n# " + ts.comment + "\n[[tensors]]\n";
    t += fmt::format("name = {}\ndtype = \"{}\"\nshape = [", python_string(ts.name), ts.dtype);
    for (std::size_t i = 0; i < ts.shape.size(); ++i)
      t += (i ? ", " : "") + python_string(ts.shape[i]);
    t += fmt::format("]\nrole = \"{}\"\n", ts.role);
    if (!ts.init.empty()) t += "init = " + ts.init + "\n";
  }
  t += "\n[cost]\n";
  if (cost.flops)
    t += fmt::format("flops = {}\n", python_string(*cost.flops));
  else
    t += "# flops = \"...\"  (not derived: see the NOTE above)\n";
  t += fmt::format("bytes = {}  # every tensor read or written once\n", python_string(bytes));
  t += "\n[reference]\nkind = \"python\"\nsource = \"ref.py\"\n";
  const TensorOut& first_out =
      *std::find_if(tensors.begin(), tensors.end(), [](auto& x) { return x.role == "output"; });
  std::string arg_list;
  for (const auto& ts : tensors)
    arg_list += (arg_list.empty() ? "" : ", ") + python_string(ts.name);
  std::string n_out = ShapeNamer::product(first_out.shape);
  t += "\n# Kernels go here. A CUDA kernel, for example (args: tensor names, then expressions):\n";
  t += "# [[kernels]]\n# name = \"cuda\"\n# source = \"kernel.cu\"\n# entry = \"my_kernel\"\n";
  t += fmt::format("# args = [{}, \"{}\"]\n", arg_list, n_out);
  t += fmt::format("# grid = [\"ceil_div({}, BLOCK)\"]\n# block = [\"BLOCK\"]\n", n_out);
  t += "# [kernels.params]\n# BLOCK = [256, 128, 512]\n";
  t += "# A Triton kernel: source = \"kernel_triton.py\", entry = \"run_kernel\", called as\n";
  t += "# run_kernel(**tensors, **dims, **params); no args, grid or block.\n";
  return t;
}

std::string ref_py(const std::string& file_name, const ImportedTensors& t) {
  Sha256 h;
  h.field(file_name);
  std::string r;
  r += fmt::format(
      "# The PyTorch reference of the KernelBench problem {} (model.py, as it came), written "
      "by\n",
      file_name);
  r += "# `kopt import kernelbench`. kopt calls reference(**tensors, **dims) with its own inputs "
       "and\n";
  r += "# checks kernels against what it writes; `kopt bench --vs-torch` times "
       "setup_baseline()'s\n";
  r += "# model on the same inputs, eager and through torch.compile, as KernelBench times it.\n";
  r += "import importlib.util\nimport os\nimport sys\nimport weakref\n\nimport torch\n\n";
  r += "# KernelBench's own correctness check: torch.allclose(output, reference, atol=1e-02, "
       "rtol=1e-02).\n";
  r += "atol = 1e-02\nrtol = 1e-02\n\n";
  r += constants(t, "") + "\n";
  r += fmt::format(
      "_spec = importlib.util.spec_from_file_location(\n"
      "    \"kopt_kernelbench_{}\", os.path.join(os.path.dirname(os.path.abspath(__file__)), "
      "\"model.py\"))\n",
      h.hex().substr(0, 12));
  // Registered in sys.modules, as importlib's recipe does: torch.compile (dynamo) looks
  // modules up by name when it traces into them.
  r += "_kb = importlib.util.module_from_spec(_spec)\nsys.modules[_spec.name] = "
       "_kb\n_spec.loader.exec_module(_kb)\n"
       "_models = {}\n\n\n";
  // Made on the device: its weights are replaced by kopt's tensors at once, and a large
  // model's initialisation on the CPU costs seconds each time a job loads ref.py (a 32768 x
  // 32768 Linear: a billion random draws). On the CPU where its __init__ needs the CPU.
  r += "def _made_on(device, make):\n"
       "    \"\"\"make() (a model) on `device`, seeded; on the CPU first where that "
       "fails.\"\"\"\n"
       "    torch.manual_seed(0)\n"
       "    try:\n"
       "        with torch.device(device):\n"
       "            return make().to(device)\n"
       "    except Exception:  # noqa: BLE001 (torch < 2.0, or an __init__ that needs the "
       "CPU)\n"
       "        torch.manual_seed(0)\n"
       "        return make().to(device)\n\n\n";
  r += k_made_empty;
  r += loaded_from_helpers("", "weakref") + "\n\n";
  r += "def _bound(kw):\n"
       "    \"\"\"The model on the outputs' device, its weights those of kw, and forward's "
       "arguments.\"\"\"\n"
       "    device = kw[OUTPUTS[0]].device\n"
       "    # f64 outputs: kopt's fp64 reference of this f32 problem (the same weights, in f64)\n"
       "    f64 = kw[OUTPUTS[0]].dtype == torch.float64\n"
       "    key = (device, f64)\n"
       "    if key not in _models:\n"
       "        make = lambda: _kb.Model(*_kb.get_init_inputs())  # noqa: E731\n"
       "        model = _made_empty(make, kw, f64)\n"
       "        if model is not None:  # its weights kopt's tensors already\n"
       "            held = _held([kw[t] for t in PARAMETERS.values()])\n"
       "        else:\n"
       "            model = _made_on(device, make)\n"
       "            model, held = model.double() if f64 else model, None\n"
       "        state = dict(model.named_parameters())\n"
       "        state.update(dict(model.named_buffers()))\n"
       "        # its weights' shapes, and those that are kopt's tensors themselves (_let_go)\n"
       "        same = [n for n, t in PARAMETERS.items() if isinstance(state[n], "
       "torch.nn.Parameter)\n"
       "                and kw[t].dtype == state[n].dtype]\n"
       "        _models[key] = [model, held, {n: t.shape for n, t in state.items()}, same]\n"
       "    entry = _models[key]\n"
       "    source = [kw[t] for t in PARAMETERS.values()]\n"
       "    if PARAMETERS and not _loaded_from(entry[1], source):\n"
       "        state = dict(entry[0].named_parameters())\n"
       "        state.update(dict(entry[0].named_buffers()))\n"
       "        with torch.no_grad():\n"
       "            for name, tensor in PARAMETERS.items():  # a 0-dim buffer is a kopt tensor "
       "of shape [1]\n"
       "                target, value = state[name], kw[tensor].reshape(entry[2][name])\n"
       "                if isinstance(target, torch.nn.Parameter) and value.dtype == "
       "target.dtype:\n"
       "                    target.data = value  # kopt's tensor itself: no second copy of GBs\n"
       "                else:  # a buffer, which forward may update (BatchNorm's statistics)\n"
       "                    target.copy_(value)\n"
       "        entry[1] = _held(source)\n"
       "    return entry[0], [(kw[v].bool() if v in BOOL_INPUTS else kw[v]) if k == \"tensor\" "
       "else v\n"
       "                      for k, v in FORWARD]\n\n\n";
  // A model kept for the next job must not keep this job's tensors alive: a reference's
  // 4 GiB weight stayed on the device beside the baselines' own until they were bound.
  r += "def _let_go(model):\n"
       "    \"\"\"kopt's tensors leave the model when its call is over (bound again at the next "
       "call).\"\"\"\n"
       "    entry = next(e for e in _models.values() if e[0] is model)\n"
       "    with torch.no_grad():\n"
       "        for name, target in entry[0].named_parameters():\n"
       "            if name in entry[3]:\n"
       "                target.data = target.data.new_empty(0)\n"
       "    entry[1] = None\n\n\n";
  // Model.forward returns its outputs: the baselines are given empty ones (device and dtype).
  r += "# setup_baseline()'s model returns its outputs; of kopt's output tensors it reads the "
       "device and\n# dtype only, so kopt gives the baselines empty ones.\n"
       "BASELINE_RETURNS_OUTPUTS = True\n\n\n";
  r += "def setup_baseline(**kw):\n    return _bound(kw)\n\n\n";
  // The reference too: kopt's worker gives it empty outputs and takes forward's results as
  // the outputs, where a poisoned output of the problem's size beside forward's own took
  // 83_Conv3d_GroupNorm_Min_Clamp_Dropout past its memory bound. Given real outputs (another
  // caller's), it copies into them.
  r += "# reference() returns forward's results by name where kopt gives it empty outputs "
       "(the same\n# device and dtype), and copies them into the outputs it is given otherwise.\n"
       "REFERENCE_RETURNS_OUTPUTS = True\n\n\n";
  r += "def reference(**kw):\n"
       "    model, args = _bound(kw)\n"
       "    try:\n"
       "        with torch.no_grad():\n"
       "            result = model(*args)\n"
       "    finally:\n"
       "        _let_go(model)\n"
       "    results = result if isinstance(result, (tuple, list)) else [result]\n"
       "    returned = {}\n"
       "    for name, value in zip(OUTPUTS, results):\n"
       "        if kw[name].numel() == 0 and value.numel() != 0:  # kopt's empty output\n"
       "            returned[name] = value\n"
       "        else:\n"
       "            kw[name].copy_(value.reshape(kw[name].shape))\n"
       "    return returned or None\n";
  return r;
}

std::string model_new_adapter(const std::string& file_name, const json& facts,
                              const ImportedTensors& t) {
  // A ModelNew file as a kernel of this problem: run_kernel() builds ModelNew as _bound()
  // builds Model (the same init inputs, weights copied from kopt's tensors by name) and
  // returns forward's results by output name; the worker copies them into place after the
  // timed window. Written into the module itself, which runs alone in its candidate room.
  std::string a = "\n\n# ---- Added by kopt: this ModelNew as a kernel of " + file_name +
                  " (run_kernel, the Triton contract) ----\n";
  a += "import weakref as _kopt_weakref\n\nimport torch as _kopt_torch\n\n";
  a += "_KOPT_INIT_INPUTS = [";
  const json init_inputs = facts.value("init_inputs", json::array());
  for (std::size_t i = 0; i < init_inputs.size(); ++i)
    a += (i ? ", " : "") + init_inputs[i].get<std::string>();
  a += "]\n" + constants(t, "_KOPT_") + "_kopt_models = {}\n\n\n";
  a += loaded_from_helpers("_kopt", "_kopt_weakref") + "\n\n";
  a += "def run_kernel(**kw):\n"
       "    device = kw[_KOPT_OUTPUTS[0]].device\n"
       "    if device not in _kopt_models:\n"
       "        _kopt_torch.manual_seed(0)\n"
       "        try:  # on the device, as the reference's Model (ref.py's _made_on)\n"
       "            with _kopt_torch.device(device):\n"
       "                model = ModelNew(*_KOPT_INIT_INPUTS).to(device)\n"
       "        except Exception:  # noqa: BLE001\n"
       "            _kopt_torch.manual_seed(0)\n"
       "            model = ModelNew(*_KOPT_INIT_INPUTS).to(device)\n"
       "        state = dict(model.named_parameters())\n"
       "        state.update(dict(model.named_buffers()))\n"
       "        missing = [n for n in _KOPT_PARAMETERS if n not in state]\n"
       "        if missing:\n"
       "            raise ValueError(\"ModelNew has no parameter or buffer %s of Model's: kopt "
       "loads "
       "Model's weights into ModelNew by name\" % \", \".join(missing))\n"
       "        _kopt_models[device] = [model, None, None, {}]  # weights' and bools' sources, "
       "bools\n"
       "    entry = _kopt_models[device]\n"
       "    source = [kw[t] for t in _KOPT_PARAMETERS.values()]\n"
       "    if _KOPT_PARAMETERS and not _kopt_loaded_from(entry[1], source):\n"
       "        state = dict(entry[0].named_parameters())\n"
       "        state.update(dict(entry[0].named_buffers()))\n"
       "        with _kopt_torch.no_grad():\n"
       "            for name, tensor in _KOPT_PARAMETERS.items():\n"
       "                state[name].copy_(kw[tensor].reshape(state[name].shape))\n"
       "        entry[1] = _kopt_held(source)\n"
       "    # The bool arguments made once per job, outside the timed calls that follow it\n"
       "    masks = [kw[v] for v in _KOPT_BOOL_INPUTS]\n"
       "    if masks and not _kopt_loaded_from(entry[2], masks):\n"
       "        entry[3] = {v: kw[v].bool() for v in _KOPT_BOOL_INPUTS}\n"
       "        entry[2] = _kopt_held(masks)\n"
       "    with _kopt_torch.no_grad():\n"
       "        result = entry[0](*[entry[3].get(v, kw[v]) if k == \"tensor\" else v\n"
       "                             for k, v in _KOPT_FORWARD])\n"
       "    results = result if isinstance(result, (tuple, list)) else [result]\n"
       "    return {name: value.reshape(kw[name].shape) for name, value in zip(_KOPT_OUTPUTS, "
       "results)}\n";
  return a;
}

}  // namespace kopt::kernelbench_text
