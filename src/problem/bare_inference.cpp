// The problem inferred from bare files (problem/bare_files.hpp): tensors from the signatures,
// setup() and reference(); shapes from "// kopt:" lines, setup() or a printed guess; roles from
// const, setup()'s outputs and what reference() writes.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/problem/bare_files.hpp"
#include "kopt/problem/expr.hpp"
#include "kopt/problem/kernelbench.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string joined(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string where(const fs::path& file, int line) {
  return file.filename().string() + (line > 0 ? ":" + std::to_string(line) : "");
}

std::string shape_text(const BareTensor& t) {
  return t.name + "[" + joined(t.shape) + "]";
}

}  // namespace

BareTensor* BareInference::find(const std::string& name) {
  for (auto& t : m_tensors)
    if (t.name == name) return &t;
  return nullptr;
}

bool BareInference::is_dim(const std::string& name) const {
  return std::any_of(m_req.dims.begin(), m_req.dims.end(),
                     [&](const auto& d) { return d.first == name; });
}

bool BareInference::is_tunable(const std::string& name) const {
  if (m_python_tunables.count(name)) return true;
  for (const auto& f : m_files)
    for (const auto& [n, v] : f.tunables)
      if (n == name) return true;
  return false;
}

Expected<BareInference> BareInference::start(BareRequest req) {
  if (req.kernels.empty())
    return Unexpected(bad_input("no kernel file: kopt init KERNEL.cu|.cl|.py [--ref REF.py]"));
  BareInference b;
  for (const auto& k : req.kernels) {
    auto f = read_bare_kernel(k);
    if (!f) return Unexpected(f.error());
    if (f->kind == BareKind::model_new)
      return Unexpected(bad_input(
          "a KernelBench ModelNew file is a problem's only kernel file (init_bare_problem imports "
          "its Model's problem); it does not mix with other kernel files",
          k.string(), 0, "ModelNew"));
    b.m_files.push_back(std::move(*f));
  }
  if (!req.ref) {
    fs::path beside = req.kernels.front().parent_path() / "ref.py";
    if (!fs::is_regular_file(beside))
      return Unexpected(bad_input(
          "no reference: kopt checks a kernel against a ref.py with reference(**kwargs), which "
          "writes the outputs in place (--ref REF.py; a ref.py beside the kernel is taken)",
          req.kernels.front().string(), 0, "--ref"));
    req.ref = beside;
    b.m_notes.push_back("the reference: ref.py beside " + req.kernels.front().filename().string() +
                        " (no --ref)");
  }
  if (!fs::is_regular_file(*req.ref))
    return Unexpected(bad_input("no such file", req.ref->string(), 0, "--ref"));
  if (req.ref->extension() != ".py")
    return Unexpected(bad_input("a reference is a Python file with reference(**kwargs)",
                                req.ref->string(), 0, "--ref"));
  std::set<std::string> seen;
  for (const auto& [name, v] : req.dims) {
    if (!seen.insert(name).second)
      return Unexpected(bad_input("dim " + name + " is given twice", "", 0, "--dims"));
    if (v <= 0)
      return Unexpected(bad_input("dim " + name + " = " + std::to_string(v) + ": dims are >= 1", "",
                                  0, "--dims"));
  }
  b.m_req = std::move(req);
  b.m_small = small_dims(b.m_req.dims);
  // Every scalar of a signature is a dim (or a compile-time param).
  for (const auto& f : b.m_files)
    for (const auto& e : f.entries)
      for (const auto& p : e.params)
        if (!p.pointer && !b.is_dim(p.name) && !b.is_tunable(p.name))
          return Unexpected(bad_input(
              fmt::format("the dims do not cover the signature: {}'s scalar {} ({}) has no value; "
                          "give it with --dims {}=...",
                          f.kind == BareKind::solve ? "solve()" : e.entry, p.name, p.type, p.name),
              f.path.string(), p.line, p.name));
  return b;
}

json BareInference::inspect_request() const {
  json py = json::array();
  for (const auto& f : m_files)
    if (f.kind == BareKind::triton) py.push_back(fs::absolute(f.path).string());
  json dims = json::object();
  for (const auto& [n, v] : m_req.dims) dims[n] = v;
  return {{"mode", "inspect"},
          {"ref", fs::absolute(*m_req.ref).string()},
          {"kernel_py", py},
          {"dims", dims},
          {"small_dims", m_small}};
}

Expected<void> BareInference::collect_tensors(const json& facts) {
  // The signatures: a pointer is a tensor with the pointer's element type.
  for (const auto& f : m_files)
    for (const auto& e : f.entries)
      for (const auto& p : e.params) {
        if (!p.pointer) continue;
        BareTensor* t = find(p.name);
        std::string sig =
            fmt::format("{}'s {} ({})", f.kind == BareKind::solve ? "solve()" : e.entry, p.type,
                        where(f.path, p.line));
        if (t && t->dtype != p.dtype)
          return Unexpected(bad_input(fmt::format("{} is {} here and {} in another signature",
                                                  p.name, p.type, dtype_name(t->dtype)),
                                      f.path.string(), p.line, p.name));
        if (!t) {
          m_tensors.push_back({});
          t = &m_tensors.back();
          t->name = p.name;
          t->dtype = p.dtype;
          t->dtype_known = true;
          t->dtype_why = "from " + sig;
          t->in_signature = true;
          t->is_const = p.is_const;
        }
      }
  // setup(): its tensors (dtype and values) and its outputs.
  if (facts.contains("setup")) {
    const json& at = facts["setup"]["at_dims"];
    for (const auto& [name, v] : at["tensors"].items()) {
      auto dt = parse_dtype(v.value("dtype", ""));
      if (!dt)
        return Unexpected(bad_input("setup() makes " + name + " a " + v.value("dtype", "") +
                                        " tensor, a dtype kopt has no name for",
                                    m_req.ref->string(), 0, name));
      BareTensor* t = find(name);
      if (t && t->dtype != *dt)
        return Unexpected(bad_input(fmt::format("setup() makes {} {} but the signature says {}",
                                                name, dtype_name(*dt), dtype_name(t->dtype)),
                                    m_req.ref->string(), 0, name));
      if (!t) {
        m_tensors.push_back({});
        t = &m_tensors.back();
        t->name = name;
        t->dtype = *dt;
        t->dtype_known = true;
        t->dtype_why = "from setup()";
      }
      t->init = init_from_stats(v.value("stats", json::object()), std::string(dtype_name(*dt)));
    }
    for (const auto& o : facts["setup"]["at_dims"].value("outputs", json::array())) {
      BareTensor* t = find(o.get<std::string>());
      if (!t)
        return Unexpected(bad_input("setup() names " + o.get<std::string>() +
                                        " an output, and returns no tensor of that name",
                                    m_req.ref->string(), 0, "outputs"));
      t->role = Role::output;
      t->role_known = true;
      t->role_why = "setup() lists it in \"outputs\"";
    }
  }
  // No signature and no setup(): reference()'s parameters that are no dim or param.
  if (m_tensors.empty()) {
    const json& r = facts.value("reference", json::object());
    for (const auto& p : r.value("params", json::array())) {
      std::string n = p;
      if (is_dim(n) || is_tunable(n)) continue;
      m_tensors.push_back({});
      m_tensors.back().name = n;
      m_tensors.back().dtype_why = "guessed: f32 (nothing declares it; say it with setup())";
    }
    if (m_tensors.empty())
      return Unexpected(bad_input(
          "cannot tell the tensors: no signature names them, reference() takes only **kwargs "
          "and no setup(**dims) returns {\"inputs\": {...}, \"outputs\": [...]}",
          m_req.ref->string(), 0, "reference"));
  }
  // "// kopt: outputs C" settles roles.
  for (const auto& f : m_files)
    for (const auto& o : f.notes.outputs) {
      BareTensor* t = find(o);
      if (!t)
        return Unexpected(
            bad_input("`kopt: outputs` names " + o + ", which is no tensor of the kernel",
                      f.path.string(), f.notes.lines.at("outputs"), "outputs"));
      t->role = Role::output;
      t->role_known = true;
      t->role_why = "`kopt: outputs` at " + where(f.path, f.notes.lines.at("outputs"));
    }
  // const in a signature that uses const: the others it takes are outputs.
  for (const auto& f : m_files)
    for (const auto& e : f.entries) {
      bool uses_const = std::any_of(e.params.begin(), e.params.end(),
                                    [](const SolveParam& p) { return p.pointer && p.is_const; });
      if (!uses_const) continue;
      for (const auto& p : e.params) {
        BareTensor* t = find(p.name);
        if (!p.pointer || !t || t->role_known) continue;
        t->role = p.is_const ? Role::input : Role::output;
        t->role_known = true;
        t->role_why = std::string(p.is_const ? "const" : "not const") + " in " +
                      (f.kind == BareKind::solve ? "solve()" : e.entry) + " (" +
                      where(f.path, p.line) + ")";
      }
    }
  return {};
}

Expected<void> BareInference::infer_shapes(const json& facts) {
  // 1. "// kopt: A[M, K]" lines.
  std::set<std::string> names;
  for (const auto& [n, v] : m_req.dims) names.insert(n);
  for (const auto& f : m_files)
    for (const auto& [name, extents] : f.notes.shapes) {
      BareTensor* t = find(name);
      int line = f.notes.lines.at(name);
      if (!t)
        return Unexpected(bad_input("`kopt:` gives a shape to " + name + ", which is no tensor",
                                    f.path.string(), line, name));
      for (const auto& x : extents) {
        auto e = Expr::parse(x);
        if (!e)
          return Unexpected(bad_input("extent '" + x + "' of " + name + ": " + e.error().message,
                                      f.path.string(), line, name));
        for (const auto& n : e->names())
          if (!names.count(n))
            return Unexpected(bad_input("extent '" + x + "' of " + name + " uses " + n +
                                            ", which is no dim: --dims " + n + "=...",
                                        f.path.string(), line, name));
      }
      t->shape = extents;
      t->shape_known = true;
      t->shape_why = "`kopt:` at " + where(f.path, line);
    }
  // 2. setup(): each extent named by the dim that has its value at both sets of dims.
  if (facts.contains("setup")) {
    const json& s = facts["setup"];
    for (auto& t : m_tensors) {
      if (t.shape_known || !s["at_dims"]["tensors"].contains(t.name)) continue;
      std::vector<std::int64_t> big = s["at_dims"]["tensors"][t.name]["shape"];
      std::vector<std::int64_t> small;
      if (s.contains("at_small") && s["at_small"]["tensors"].contains(t.name))
        small = s["at_small"]["tensors"][t.name]["shape"].get<std::vector<std::int64_t>>();
      std::set<std::string> used;
      for (std::size_t i = 0; i < big.size(); ++i) {
        std::string axis;
        for (const auto& [n, v] : m_req.dims) {
          bool same_small = small.size() == big.size() ? small[i] == m_small.at(n) : true;
          if (v == big[i] && same_small && (small.size() == big.size() || !used.count(n))) {
            axis = n;
            break;
          }
        }
        if (axis.empty()) {
          axis = std::to_string(big[i]);
          if (small.size() == big.size() && small[i] != big[i])
            m_notes.push_back(fmt::format(
                "extent {} of {} ({}) follows no dim: fixed at {} (a `kopt:` line can name it)", i,
                t.name, big[i], big[i]));
        }
        used.insert(axis);
        t.shape.push_back(axis);
      }
      t.shape_known = true;
      t.shape_why = small.size() == big.size()
                        ? "from setup() at the dims and at small dims"
                        : "from setup() at the dims (at small dims it failed: " +
                              s.value("small_error", std::string("?")) +
                              "), extents named by value";
    }
  }
  // 3. A printed guess, checked when reference() runs on it.
  std::vector<std::string> sig_dims;
  for (const auto& f : m_files)
    for (const auto& e : f.entries)
      for (const auto& p : e.params)
        if (!p.pointer && is_dim(p.name) &&
            std::find(sig_dims.begin(), sig_dims.end(), p.name) == sig_dims.end())
          sig_dims.push_back(p.name);
  if (sig_dims.empty())
    for (const auto& [n, v] : m_req.dims) sig_dims.push_back(n);
  auto named = [&](const char* n) -> BareTensor* {
    BareTensor* t = find(n);
    if (!t) {
      std::string lower(n);
      lower[0] = static_cast<char>(std::tolower(lower[0]));
      t = find(lower);
    }
    return t;
  };
  bool gemm = m_tensors.size() == 3 && named("A") && named("B") && named("C") && is_dim("M") &&
              is_dim("N") && is_dim("K");
  for (auto& t : m_tensors) {
    if (t.shape_known) continue;
    if (sig_dims.empty())
      return Unexpected(bad_input("cannot tell the shape of " + t.name +
                                      ": there are no dims (--dims "
                                      "NAME=VALUE,...)",
                                  m_files.front().path.string(), 0, "--dims"));
    if (gemm) {
      m_gemm = true;
      t.shape = &t == named("A")   ? std::vector<std::string>{"M", "K"}
                : &t == named("B") ? std::vector<std::string>{"K", "N"}
                                   : std::vector<std::string>{"M", "N"};
      t.shape_why = "guessed: the GEMM convention A[M, K] B[K, N] C[M, N]";
    } else if (sig_dims.size() == 1) {
      t.shape = sig_dims;
      t.shape_why = "guessed: the only dim, " + sig_dims.front();
    } else {
      t.shape = sig_dims;
      t.shape_why = "guessed: every dim, in the signature's order";
    }
  }
  std::vector<std::string> guessed;
  for (const auto& t : m_tensors)
    if (t.shape_why.rfind("guessed", 0) == 0) guessed.push_back(shape_text(t));
  if (!guessed.empty())
    m_shape_hint = "`// kopt: " + joined(guessed, " ") + "` (with the right extents) in " +
                   m_files.front().path.filename().string();
  return {};
}

Expected<void> BareInference::check_reference_signature() const {
  if (m_reference.value("var_kw", false)) return {};
  std::set<std::string> params;
  for (const auto& p : m_reference.value("params", json::array())) params.insert(p);
  // kopt calls reference(**tensors, **dims).
  for (const auto& t : m_tensors)
    if (!params.count(t.name))
      return Unexpected(bad_input("reference() takes no argument " + t.name +
                                      ", and kopt calls it with every tensor and dim by name: add "
                                      "**kwargs to its parameters",
                                  m_req.ref->string(), 0, "reference"));
  for (const auto& [n, v] : m_req.dims)
    if (!params.count(n))
      return Unexpected(bad_input(
          "reference() takes no argument " + n + " (a dim): add **kwargs to its parameters",
          m_req.ref->string(), 0, "reference"));
  return {};
}

Expected<void> BareInference::take_inspect(const json& facts) {
  if (facts.contains("error"))
    return Unexpected(bad_input(facts["error"].get<std::string>(), m_req.ref->string()));
  m_reference = facts.value("reference", json::object());
  const json kernels = facts.value("kernels", json::array());
  for (const auto& k : kernels) {
    const json defaults = k.value("defaults", json::object());
    for (const auto& [n, v] : defaults.items())
      if (!is_dim(n)) m_python_tunables[n] = v.get<std::int64_t>();
  }
  if (auto r = collect_tensors(facts); !r) return r;
  for (auto it = m_python_tunables.begin(); it != m_python_tunables.end();)
    it = find(it->first) ? m_python_tunables.erase(it) : std::next(it);
  if (auto r = infer_shapes(facts); !r) return r;
  // Required parameters of run_kernel() and reference() are tensors, dims or params.
  for (std::size_t i = 0, pi = 0; i < m_files.size(); ++i) {
    if (m_files[i].kind != BareKind::triton) continue;
    const json params = kernels.at(pi++).value("params", json::array());
    for (const auto& p : params)
      if (!find(p) && !is_dim(p) && !is_tunable(p))
        return Unexpected(bad_input("run_kernel()'s parameter " + p.get<std::string>() +
                                        " is no tensor, dim or param: give it with --dims " +
                                        p.get<std::string>() + "=...",
                                    m_files[i].path.string(), 0, p.get<std::string>()));
  }
  return check_reference_signature();
}

json BareInference::writes_request(bool full) const {
  Scope scope;
  json dims = json::object();
  for (const auto& [n, v] : m_req.dims) {
    std::int64_t x = full ? v : m_small.at(n);
    scope[n] = x;
    dims[n] = x;
  }
  json tensors = json::array();
  for (const auto& t : m_tensors) {
    json shape = json::array();
    for (const auto& x : t.shape) {
      auto e = Expr::parse(x);
      auto v = e ? e->evaluate_int(scope) : Expected<std::int64_t>(Unexpected(e.error()));
      shape.push_back(v ? *v : 1);
    }
    tensors.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", shape}});
  }
  return {{"mode", "writes"},
          {"ref", fs::absolute(*m_req.ref).string()},
          {"small_dims", dims},
          {"tensors", tensors}};
}

double BareInference::bytes_at_dims() const {
  Scope scope;
  for (const auto& [n, v] : m_req.dims) scope[n] = v;
  double total = 0;
  for (const auto& t : m_tensors) {
    double n = static_cast<double>(dtype_size(t.dtype));
    for (const auto& x : t.shape) {
      auto e = Expr::parse(x);
      auto v = e ? e->evaluate(scope) : Expected<Value>(Unexpected(e.error()));
      n *= v ? as_double(*v) : 1.0;
    }
    total += n;
  }
  return total;
}

Expected<void> BareInference::take_writes(const json& facts) {
  if (facts.contains("error")) {
    std::string shapes;
    for (const auto& t : m_tensors) shapes += (shapes.empty() ? "" : " ") + shape_text(t);
    if (!m_shape_hint.empty())
      return Unexpected(bad_input("reference() fails on tensors of the guessed shapes " + shapes +
                                      ": " + facts["error"].get<std::string>() +
                                      "; declare the shapes with " + m_shape_hint,
                                  m_files.front().path.string(), 0, "shape"));
    return Unexpected(bad_input("reference() fails on tensors of the shapes " + shapes + ": " +
                                    facts["error"].get<std::string>(),
                                m_req.ref->string(), 0, "reference"));
  }
  std::set<std::string> written;
  for (const auto& w : facts.value("written", json::array())) written.insert(w);
  for (auto& t : m_tensors) {
    if (t.role_known) {
      if (t.role == Role::input && written.count(t.name))
        m_notes.push_back("reference() writes " + t.name + ", which " + t.role_why +
                          " makes an input: kopt checks that kernels do not modify it");
      continue;
    }
    t.role = written.count(t.name) ? Role::output : Role::input;
    t.role_why = written.count(t.name) ? "reference() writes it (run once on small inputs)"
                                       : "reference() does not write it (run once on small inputs)";
  }
  if (std::none_of(m_tensors.begin(), m_tensors.end(),
                   [](const BareTensor& t) { return t.role != Role::input; })) {
    std::string why = facts.contains("returned")
                          ? "reference() returns its result instead of writing it: write it "
                            "into the output in place (out.copy_(...)), as kopt's references do"
                          : "reference() wrote none of its tensors";
    return Unexpected(bad_input(
        "no tensor is an output: " + why + "; or mark the outputs with `// kopt: outputs NAME`",
        m_req.ref->string(), 0, "reference"));
  }
  return {};
}

std::string BareInference::numel(const BareTensor& t) const {
  std::vector<std::string> parts;
  for (const auto& x : t.shape) {
    bool simple =
        std::all_of(x.begin(), x.end(), [](char c) { return std::isalnum(c) || c == '_'; });
    parts.push_back(simple ? x : "(" + x + ")");
  }
  return parts.empty() ? "1" : joined(parts, " * ");
}

std::string BareInference::input_hash() const {
  Sha256 h;
  h.field("kopt-init-1");
  for (const auto& f : m_files) {
    h.field(f.path.filename().string());
    h.field(read_text_file(f.path).value_or(""));
  }
  h.field(read_text_file(*m_req.ref).value_or(""));
  for (const auto& [n, v] : m_req.dims) h.field(n + "=" + std::to_string(v));
  return h.hex().substr(0, 16);
}

}  // namespace kopt
