#include "kopt/problem/loader.hpp"

#include <set>

#include "arg_reader.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/toml_text.hpp"
#include "kopt/problem/arch_target.hpp"
#include "kopt/problem/param_space.hpp"
#include "kopt/problem/solve_abi.hpp"
#include "toml_reader.hpp"

namespace kopt {
namespace fs = std::filesystem;
using detail::line_of;
using detail::SpecError;
using detail::TomlReader;

namespace {

using detail::indexed;

class Loader {
 public:
  Loader(const std::string& file, fs::path dir, const std::map<std::string, std::int64_t>& dims)
      : m_file(file), m_dir(std::move(dir)), m_dim_overrides(dims) {}

  Problem load(const toml::table& root) {
    Problem p;
    p.dir = m_dir;
    p.spec_path = m_file;
    TomlReader r(root, "", m_file);
    p.name = r.get_string("name");
    p.family = r.get_string("family", p.name);
    p.description = r.get_string("description", "");
    read_dims(r, p);
    read_tensors(r, p);
    read_cost(r, p);
    read_tolerances(r, p);
    read_check(r, p);
    read_reference(r, p);
    read_kernels(r, p);
    r.reject_unknown();
    return p;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& field, const std::string& why) const {
    throw SpecError{bad_input(why, m_file, line, field)};
  }

  const toml::table& table_at(TomlReader& r, const std::string& key, bool required) {
    const toml::node* n = r.node(key);
    if (!n) {
      if (required) fail(r.table_line(), r.field(key), "missing required table");
      static const toml::table empty;
      return empty;
    }
    if (!n->is_table()) r.fail(key, "expected a table");
    return *n->as_table();
  }

  Expr parse_expr(const std::string& text, int line, const std::string& field,
                  const std::set<std::string>& allowed, const std::string& allowed_what) {
    return detail::parse_spec_expr(text, m_file, line, field, allowed, allowed_what);
  }

  void read_dims(TomlReader& r, Problem& p) {
    const toml::table& t = table_at(r, "dims", false);
    for (const auto& [k, v] : t) {
      std::string name(k.str());
      std::string field = "dims." + name;
      if (!v.is_integer()) fail(line_of(v), field, "expected an integer");
      std::int64_t value = v.as_integer()->get();
      if (auto it = m_dim_overrides.find(name); it != m_dim_overrides.end()) value = it->second;
      if (value <= 0) fail(line_of(v), field, "must be > 0, got " + std::to_string(value));
      p.dims.push_back(Dim{name, value, {line_of(v), field}});
      m_dim_names.insert(name);
    }
    for (const auto& [name, value] : m_dim_overrides)
      if (!m_dim_names.count(name))
        fail(r.line("dims"), "dims",
             "--dim " + name + "=" + std::to_string(value) + ": no such dim in the problem");
  }

  InitSpec read_init(const toml::node& n, const std::string& field, DType dtype) {
    InitSpec init;
    std::string kind;
    const toml::table* t = n.as_table();
    if (n.is_string()) {
      kind = n.as_string()->get();
    } else if (!t) {
      fail(line_of(n), field, "expected a string or a table such as { kind = \"normal\" }");
    }
    static const toml::table empty;
    TomlReader ir(t ? *t : empty, field, m_file);
    if (t) kind = ir.get_string("kind");
    if (kind == "normal") {
      init = {InitKind::normal, ir.get_number("mean", 0.0), ir.get_number("std", 1.0)};
      if (init.b <= 0) fail(line_of(n), field + ".std", "must be > 0");
    } else if (kind == "uniform") {
      init = {InitKind::uniform, ir.get_number("low", -1.0), ir.get_number("high", 1.0)};
      if (!(init.a < init.b)) fail(line_of(n), field, "uniform needs low < high");
    } else if (kind == "randint") {
      double hi_default = dtype == DType::u8 ? 256.0 : 100.0;
      init = {InitKind::randint, ir.get_number("low", 0.0), ir.get_number("high", hi_default)};
      if (!(init.a < init.b)) fail(line_of(n), field, "randint needs low < high");
    } else if (kind == "arange") {
      init = {InitKind::arange, ir.get_number("start", 0.0), ir.get_number("step", 1.0)};
    } else if (kind == "constant") {
      init = {InitKind::constant, ir.get_number("value", 1.0), 0.0};
    } else {
      fail(line_of(n), field,
           "unknown init kind '" + kind + "' (known: normal, uniform, randint, arange, constant)");
    }
    ir.reject_unknown();
    return init;
  }

  Tolerance read_tolerance(const toml::node& n, const std::string& field, Tolerance base) {
    const toml::table* t = n.as_table();
    if (!t) fail(line_of(n), field, "expected a table { atol = ..., rtol = ... }");
    TomlReader tr(*t, field, m_file);
    Tolerance tol{tr.get_number("atol", base.atol), tr.get_number("rtol", base.rtol)};
    if (tol.atol < 0 || tol.rtol < 0) fail(line_of(n), field, "tolerances must be >= 0");
    tr.reject_unknown();
    return tol;
  }

  void read_tensors(TomlReader& r, Problem& p) {
    const toml::node* n = r.node("tensors");
    if (!n) fail(r.table_line(), "tensors", "missing required array of tables [[tensors]]");
    const toml::array* arr = n->as_array();
    if (!arr || arr->empty()) r.fail("tensors", "expected a non-empty array of tables [[tensors]]");
    for (std::size_t i = 0; i < arr->size(); ++i) {
      std::string field = indexed("tensors", i);
      const toml::table* t = arr->get(i)->as_table();
      if (!t) fail(line_of(*arr->get(i)), field, "expected a table");
      TomlReader tr(*t, field, m_file);
      TensorSpec ts;
      ts.where = {line_of(*t), field};
      ts.name = tr.get_string("name");
      if (m_dim_names.count(ts.name) || p.find_tensor(ts.name))
        tr.fail("name", "name '" + ts.name + "' is already used by a dim or another tensor");
      std::string dtype = tr.get_string("dtype");
      auto dt = parse_dtype(dtype);
      if (!dt) tr.fail("dtype", "unknown dtype '" + dtype + "' (known: " + known_dtypes() + ")");
      ts.dtype = *dt;
      read_shape(tr, ts, p);
      std::string role = tr.get_string("role");
      if (role == "input")
        ts.role = Role::input;
      else if (role == "output")
        ts.role = Role::output;
      else if (role == "inout")
        ts.role = Role::inout;
      else
        tr.fail("role", "unknown role '" + role + "' (known: input, output, inout)");
      if (const toml::node* init = tr.node("init")) {
        if (ts.role == Role::output)
          tr.fail("init", "an output tensor is poisoned before each run, not initialized");
        ts.init = read_init(*init, tr.field("init"), ts.dtype);
      } else if (!is_float(ts.dtype)) {
        ts.init = {InitKind::randint, 0.0, ts.dtype == DType::u8 ? 256.0 : 100.0};
      }
      if (const toml::node* tol = tr.node("tolerance"))
        ts.tolerance = read_tolerance(*tol, tr.field("tolerance"), default_tolerance(ts.dtype));
      tr.reject_unknown();
      p.tensors.push_back(std::move(ts));
    }
    bool any_output = false;
    for (const auto& t : p.tensors) any_output = any_output || t.role != Role::input;
    if (!any_output) r.fail("tensors", "no tensor has role output or inout: nothing to check");
  }

  void read_shape(TomlReader& tr, TensorSpec& ts, const Problem& p) {
    const toml::node* n = tr.node("shape");
    if (!n) fail(ts.where.line, tr.field("shape"), "missing required field");
    const toml::array* arr = n->as_array();
    if (!arr || arr->empty()) tr.fail("shape", "expected a non-empty array of expressions");
    Scope dims = p.dim_scope();
    for (std::size_t d = 0; d < arr->size(); ++d) {
      std::string field = indexed(tr.field("shape"), d);
      const toml::node& item = *arr->get(d);
      Expr e =
          parse_expr(tr.expr_text(item, field), line_of(item), field, m_dim_names, "known dims");
      auto v = e.evaluate_int(dims);
      if (!v) fail(line_of(item), field, v.error().message);
      if (*v <= 0) fail(line_of(item), field, "extent must be > 0, got " + std::to_string(*v));
      ts.shape.push_back(e);
    }
  }

  void read_cost(TomlReader& r, Problem& p) {
    if (!r.has("cost")) return;
    TomlReader cr(table_at(r, "cost", true), "cost", m_file);
    CostSpec cost;
    for (const char* key : {"flops", "bytes"}) {
      // flops may be left out where nobody knows them yet (an imported operator kopt has
      // no formula for): the roofline then places the kernel by its bytes alone.
      const toml::node* n = cr.node(key);
      if (!n && std::string(key) == "flops") continue;
      if (!n) fail(line_of(*r.node("cost")), cr.field(key), "missing required field");
      Expr e = parse_expr(cr.expr_text(*n, cr.field(key)), line_of(*n), cr.field(key), m_dim_names,
                          "known dims");
      auto v = e.evaluate(p.dim_scope());
      if (!v) fail(line_of(*n), cr.field(key), v.error().message);
      if (as_double(*v) < 0) fail(line_of(*n), cr.field(key), "must be >= 0");
      (std::string(key) == "flops" ? cost.flops : cost.bytes) = e;
    }
    cr.reject_unknown();
    p.cost = cost;
  }

  // [check] dims = { n = 65536 }: another shape every kernel is checked at too (seed 1), so
  // that a kernel which hard-codes the problem's shape is caught.
  void read_check(TomlReader& r, Problem& p) {
    if (!r.has("check")) return;
    TomlReader cr(table_at(r, "check", true), "check", m_file);
    if (const toml::node* d = cr.node("dims")) {
      const toml::table* t = d->as_table();
      if (!t) fail(line_of(*d), "check.dims", "expected a table of dims, such as { n = 65536 }");
      for (const auto& [k, v] : *t) {
        std::string name(k.str()), field = "check.dims." + name;
        if (!m_dim_names.count(name)) fail(line_of(v), field, "no such dim in [dims]");
        if (!v.is_integer() || v.as_integer()->get() <= 0)
          fail(line_of(v), field, "expected an integer > 0");
        p.check_dims[name] = v.as_integer()->get();
      }
    }
    cr.reject_unknown();
  }

  void read_tolerances(TomlReader& r, Problem& p) {
    if (!r.has("tolerance")) return;
    const toml::table& t = table_at(r, "tolerance", true);
    for (const auto& [k, v] : t) {
      std::string name(k.str());
      auto dt = parse_dtype(name);
      if (!dt)
        fail(line_of(v), "tolerance." + name,
             "unknown dtype '" + name + "' (known: " + known_dtypes() + ")");
      p.tolerances[*dt] = read_tolerance(v, "tolerance." + name, default_tolerance(*dt));
    }
  }

  std::array<Expr, 3> read_dim3(TomlReader& kr, const std::string& key, bool required,
                                const std::set<std::string>& names, SourceRef& where) {
    std::array<Expr, 3> out{Expr::constant(1), Expr::constant(1), Expr::constant(1)};
    const toml::node* n = kr.node(key);
    where = {n ? line_of(*n) : kr.table_line(), kr.field(key)};
    if (!n) {
      if (required) fail(kr.table_line(), kr.field(key), "missing required field");
      return out;
    }
    if (const toml::array* arr = n->as_array()) {
      if (arr->empty() || arr->size() > 3) kr.fail(key, "expected 1 to 3 extents (x, y, z)");
      for (std::size_t i = 0; i < arr->size(); ++i) {
        std::string field = indexed(kr.field(key), i);
        out[i] = parse_expr(kr.expr_text(*arr->get(i), field), line_of(*arr->get(i)), field, names,
                            "known dims and params");
      }
    } else {
      out[0] = parse_expr(kr.expr_text(*n, kr.field(key)), line_of(*n), kr.field(key), names,
                          "known dims and params");
    }
    return out;
  }

  void read_params(TomlReader& kr, KernelSpec& k) {
    if (!kr.has("params")) return;
    const toml::table& t = table_at(kr, "params", true);
    for (const auto& [key, v] : t) {
      ParamSpec ps;
      ps.name = std::string(key.str());
      std::string field = kr.field("params") + "." + ps.name;
      ps.where = {line_of(v), field};
      if (m_dim_names.count(ps.name)) fail(line_of(v), field, "param name is already a dim");
      const toml::array* values = v.as_array();
      std::optional<std::int64_t> explicit_default;
      if (const toml::table* pt = v.as_table()) {
        TomlReader pr(*pt, field, m_file);
        const toml::node* vals = pr.node("values");
        if (!vals || !vals->is_array())
          fail(line_of(v), field + ".values", "expected an array of integers");
        values = vals->as_array();
        if (pr.has("default")) explicit_default = pr.get_int("default");
        pr.reject_unknown();
      }
      if (!values || values->empty())
        fail(line_of(v), field, "expected a non-empty array of integers or booleans");
      for (std::size_t i = 0; i < values->size(); ++i) {
        const toml::node& item = *values->get(i);
        if (item.is_integer())
          ps.values.push_back(item.as_integer()->get());
        else if (item.is_boolean())
          ps.values.push_back(item.as_boolean()->get() ? 1 : 0);
        else
          fail(line_of(item), indexed(field, i), "expected an integer or a boolean");
      }
      ps.default_value = explicit_default.value_or(ps.values.front());
      if (explicit_default &&
          std::find(ps.values.begin(), ps.values.end(), *explicit_default) == ps.values.end())
        fail(line_of(v), field + ".default",
             "default " + std::to_string(*explicit_default) + " is not one of the values");
      k.params.push_back(std::move(ps));
    }
  }

  // [kernels.methods]: METHOD = { on = "P=V [P=V...]", off = "P=V [P=V...]" }, over declared
  // values.
  void read_methods(TomlReader& kr, KernelSpec& k) {
    if (!kr.has("methods")) return;
    const toml::table& t = table_at(kr, "methods", true);
    for (const auto& [key, v] : t) {
      MethodToggle m;
      m.method = std::string(key.str());
      std::string field = kr.field("methods") + "." + m.method;
      m.where = {line_of(v), field};
      const toml::table* mt = v.as_table();
      if (!mt) fail(line_of(v), field, "expected { on = \"P=V\", off = \"P=V\" }");
      TomlReader mr(*mt, field, m_file);
      m.on = read_assignments(k, mr.get_string("on"), line_of(v), field + ".on");
      m.off = read_assignments(k, mr.get_string("off"), line_of(v), field + ".off");
      mr.reject_unknown();
      k.methods.push_back(std::move(m));
    }
  }

  std::map<std::string, std::int64_t> read_assignments(const KernelSpec& k, const std::string& text,
                                                       int line, const std::string& field) {
    std::map<std::string, std::int64_t> out;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find(' ', start);
      std::string item =
          text.substr(start, end == std::string::npos ? std::string::npos : end - start);
      start = end == std::string::npos ? text.size() : end + 1;
      if (item.empty()) continue;
      auto eq = item.find('=');
      const ParamSpec* ps = eq == std::string::npos ? nullptr : k.find_param(item.substr(0, eq));
      if (!ps)
        fail(line, field, "'" + item + "': expected PARAM=VALUE with a param of this kernel");
      std::int64_t value = 0;
      try {
        value = std::stoll(item.substr(eq + 1));
      } catch (const std::exception&) {
        fail(line, field, "'" + item + "': the value must be an integer");
      }
      if (std::find(ps->values.begin(), ps->values.end(), value) == ps->values.end())
        fail(
            line, field,
            "'" + item + "': " + std::to_string(value) + " is not a declared value of " + ps->name);
      out[ps->name] = value;
    }
    if (out.empty()) fail(line, field, "expected at least one PARAM=VALUE");
    return out;
  }

  // `source`: one file, or the same kernel in several languages (one file per language).
  void read_sources(TomlReader& kr, KernelSpec& k, bool is_reference) {
    const toml::node* n = kr.node("source");
    std::vector<std::string> files;
    if (n && n->is_array() && !is_reference)
      files = kr.get_string_list("source");
    else
      files.push_back(kr.get_string("source"));
    if (files.empty()) kr.fail("source", "expected a file name, or a non-empty array of them");
    std::set<KernelLanguage> seen;
    for (std::size_t i = 0; i < files.size(); ++i) {
      std::string f = files.size() > 1 ? indexed(kr.field("source"), i) : kr.field("source");
      int line = n ? line_of(*n) : kr.table_line();
      fs::path full = m_dir / files[i];
      if (!fs::is_regular_file(full)) fail(line, f, "file not found: " + full.string());
      auto lang = kernel_language_of(files[i]);
      if (files.size() > 1 && !lang)
        fail(line, f,
             "'" + files[i] + "': a kernel in several languages needs .cu, .cl or .py sources");
      if (lang && !seen.insert(*lang).second)
        fail(line, f,
             "two sources in " + std::string(kernel_language_name(*lang)) + " for one kernel");
      k.sources.emplace_back(files[i]);
    }
    k.source = k.sources.front();
  }

  // A solve() kernel's arguments come from its signature, each matched by name: a const
  // pointer to an input tensor, another pointer to an output, a scalar to a dim or param.
  void read_solve_args(TomlReader& kr, KernelSpec& k, const Problem& p) {
    const std::string src = (m_dir / k.source).string();
    if (k.sources.size() != 1 || kernel_language_of(k.source) != KernelLanguage::cuda)
      kr.fail("source", "a solve() kernel is one .cu file");
    for (const char* key : {"args", "grid", "block", "shared_mem"})
      if (kr.node(key))
        fail(
            line_of(*kr.node(key)), kr.field(key),
            "a solve() kernel launches its own kernels and takes its arguments from its signature");
    auto text = read_text_file(m_dir / k.source);
    if (!text) kr.fail("source", text.error().message);
    auto params = parse_solve_signature(*text, k.entry, src);
    if (!params) throw SpecError{params.error()};
    std::set<std::string> names = m_dim_names;
    for (const auto& prm : k.params) names.insert(prm.name);
    for (const auto& sp : *params) {
      auto bad = [&](const std::string& why) {
        throw SpecError{bad_input(why, src, sp.line, sp.name)};
      };
      ArgSpec a;
      a.where = {sp.line, kr.field("source") + ":" + sp.name};
      if (sp.pointer) {
        const TensorSpec* t = p.find_tensor(sp.name);
        if (!t) bad("solve()'s pointer " + sp.name + " names no tensor of kopt.toml");
        if (t->dtype != sp.dtype)
          bad(sp.name + " is " + sp.type + " in solve() but " + std::string(dtype_name(t->dtype)) +
              " in kopt.toml");
        if (sp.is_const && t->role != Role::input)
          bad(sp.name + " is const in solve() but kopt.toml makes it an " +
              std::string(role_name(t->role)));
        if (!sp.is_const && t->role == Role::input)
          bad(sp.name +
              " is an input in kopt.toml: declare it const in solve() (other pointers are "
              "outputs)");
        a.tensor = sp.name;
      } else {
        if (!names.count(sp.name))
          bad("solve()'s scalar " + sp.name + " names no dim or param of kopt.toml");
        a.scalar = parse_expr(sp.name, sp.line, sp.name, names, "known dims and params");
        a.scalar_dtype = sp.dtype;
      }
      k.args.push_back(std::move(a));
    }
    k.launch.grid = k.launch.block = {Expr::constant(1), Expr::constant(1), Expr::constant(1)};
    k.launch.shared_mem = Expr::constant(0);
    k.compile_options = kr.get_string_list("options");
    k.include_dirs = read_include_dirs(kr);
    read_constraints(kr, k, names);
  }

  void read_constraints(TomlReader& kr, KernelSpec& k, const std::set<std::string>& names) {
    auto texts = kr.get_string_list("constraints");
    for (std::size_t i = 0; i < texts.size(); ++i) {
      int line = line_of(*kr.node("constraints")->as_array()->get(i));
      std::string cf = indexed(kr.field("constraints"), i);
      k.constraints.push_back(
          {parse_expr(texts[i], line, cf, names, "known dims and params"), {line, cf}});
    }
  }

  // Why `k` cannot use a CUDA-only feature (an arch target, tensor-map args); empty when it
  // can. `every_source`: its ports in other languages would have to take it too.
  std::string not_cuda(const KernelSpec& k, const Problem& p, bool is_reference,
                       bool every_source) const {
    if (is_reference && p.reference.kind != ReferenceKind::cuda)
      return "the reference is of kind \"" + std::string(reference_kind_name(p.reference.kind)) +
             "\"";
    bool any_cuda = false;
    for (const auto& s : k.sources) {
      KernelLanguage lang = language_of(s);
      any_cuda = any_cuda || lang == KernelLanguage::cuda;
      if (every_source && lang != KernelLanguage::cuda)
        return "kernel '" + k.name + "' has a source in " +
               std::string(kernel_language_name(lang)) + " (" + s.string() + ")";
    }
    return any_cuda ? "" : "kernel '" + k.name + "' has no CUDA (.cu) source";
  }

  // arch = "sm_90a": the kernel is built for this target rather than the device's.
  void read_arch(TomlReader& kr, KernelSpec& k, const Problem& p, bool is_reference) {
    k.arch = kr.get_string("arch");
    k.arch_where = {kr.line("arch"), kr.field("arch")};
    if (!is_arch_target(k.arch))
      kr.fail("arch", "unknown arch '" + k.arch +
                          "': expected sm_<digits>, optionally with an a or f suffix (sm_90a, "
                          "sm_100a, sm_100f)");
    if (std::string why = not_cuda(k, p, is_reference, false); !why.empty())
      kr.fail("arch", "an arch target is for CUDA kernels: " + why);
  }

  KernelSpec read_kernel(const toml::table& t, const std::string& field, const Problem& p,
                         bool is_reference) {
    TomlReader kr(t, field, m_file);
    KernelSpec k;
    k.where = {line_of(t), field};
    k.name = is_reference ? "reference" : kr.get_string("name");
    if (is_reference) kr.node("kind");  // read by read_reference
    read_sources(kr, k, is_reference);
    bool python_ref = is_reference && p.reference.kind == ReferenceKind::python;
    // Triton kernels (.py only) take tensors, dims and params by name and launch themselves:
    // args, grid and block are optional for them.
    bool triton_only = std::all_of(k.sources.begin(), k.sources.end(), [](const fs::path& s) {
      return kernel_language_of(s) == KernelLanguage::triton;
    });
    std::string abi = is_reference ? "kernel" : kr.get_string("abi", "kernel");
    if (abi != "kernel" && abi != "solve")
      kr.fail("abi", "unknown abi '" + abi + "' (known: kernel, solve)");
    if (abi == "solve") k.abi = KernelSpec::Abi::solve;
    k.entry = python_ref       ? kr.get_string("entry", "reference")
              : abi == "solve" ? kr.get_string("entry", "solve")
                               : kr.get_string("entry");
    if (!is_reference) {
      read_params(kr, k);
      read_methods(kr, k);
    }
    if (kr.has("arch")) read_arch(kr, k, p, is_reference);
    if (k.abi == KernelSpec::Abi::solve) {
      read_solve_args(kr, k, p);
      kr.reject_unknown();
      return k;
    }
    std::set<std::string> names = m_dim_names;
    for (const auto& prm : k.params) names.insert(prm.name);
    std::set<std::string> launch_names = names;
    launch_names.insert("sm_count");  // the device's SM count, for grid-stride launches
    // A ref.py takes every tensor and dim by name: it needs no args list.
    const toml::node* args = kr.node("args");
    if (!python_ref && !triton_only && (!args || !args->is_array()))
      fail(line_of(t), kr.field("args"), "missing required array");
    if (args && args->is_array())
      for (std::size_t i = 0; i < args->as_array()->size(); ++i)
        k.args.push_back(detail::read_arg(*args->as_array()->get(i), indexed(kr.field("args"), i),
                                          p, names, m_file));
    for (const auto& a : k.args)
      if (a.tensor_map)
        if (std::string why = not_cuda(k, p, is_reference, true); !why.empty())
          fail(a.where.line, a.where.field + ".tensor_map",
               "a tensor map is passed only to CUDA kernels: " + why);
    bool cuda = !is_reference || p.reference.kind == ReferenceKind::cuda;
    if (cuda && triton_only && !kr.node("grid") && !kr.node("block")) {
      k.launch.grid = k.launch.block = {Expr::constant(1), Expr::constant(1), Expr::constant(1)};
      k.launch.shared_mem = Expr::constant(0);
    } else if (cuda) {
      k.launch.grid = read_dim3(kr, "grid", true, launch_names, k.launch.grid_where);
      k.launch.block = read_dim3(kr, "block", true, names, k.launch.block_where);
      k.launch.shared_mem = Expr::constant(0);
      k.launch.shared_where = {kr.table_line(), kr.field("shared_mem")};
      if (const toml::node* smem = kr.node("shared_mem")) {
        k.launch.shared_where.line = line_of(*smem);
        k.launch.shared_mem =
            parse_expr(kr.expr_text(*smem, kr.field("shared_mem")), line_of(*smem),
                       kr.field("shared_mem"), names, "known dims and params");
      }
      k.compile_options = kr.get_string_list("options");
      k.include_dirs = read_include_dirs(kr);
    }
    if (!is_reference) read_constraints(kr, k, names);
    if (is_reference && !cuda) m_cxx_flags = kr.get_string_list("cxx_flags");
    kr.reject_unknown();
    return k;
  }

  void read_reference(TomlReader& r, Problem& p) {
    const toml::table& t = table_at(r, "reference", true);
    TomlReader rr(t, "reference", m_file);
    std::string kind = rr.get_string("kind");
    bool known = false;
    for (ReferenceKind k : {ReferenceKind::cuda, ReferenceKind::cpp, ReferenceKind::python})
      if (kind == reference_kind_name(k)) {
        p.reference.kind = k;
        known = true;
      }
    if (!known) rr.fail("kind", "unknown reference kind '" + kind + "' (known: cuda, cpp, python)");
    p.reference.kernel = read_kernel(t, "reference", p, true);
    p.reference.cxx_flags = m_cxx_flags;
  }

  void read_kernels(TomlReader& r, Problem& p) {
    // A problem may have no kernels yet (a fresh `kopt import`): it loads, references and
    // baselines run, and the commands that need a kernel say so.
    const toml::node* n = r.node("kernels");
    if (!n) return;
    const toml::array* arr = n->as_array();
    if (!arr || arr->empty()) r.fail("kernels", "expected a non-empty array of tables [[kernels]]");
    for (std::size_t i = 0; i < arr->size(); ++i) {
      const toml::table* t = arr->get(i)->as_table();
      if (!t) fail(line_of(*arr->get(i)), indexed("kernels", i), "expected a table");
      KernelSpec k = read_kernel(*t, indexed("kernels", i), p, false);
      if (p.find_kernel(k.name))
        fail(line_of(*t), indexed("kernels", i) + ".name",
             "duplicate kernel name '" + k.name + "'");
      p.kernels.push_back(std::move(k));
      // A space in which no point satisfies the constraints is an error of the spec.
      auto point = default_point(p, p.kernels.back());
      if (!point) throw SpecError{point.error()};
    }
  }

  const std::string& m_file;
  fs::path m_dir;
  const std::map<std::string, std::int64_t>& m_dim_overrides;
  std::set<std::string> m_dim_names;
  std::vector<std::string> m_cxx_flags;
};

}  // namespace

Expected<Problem> parse_problem(const std::string& toml_text, const fs::path& spec_path,
                                const std::map<std::string, std::int64_t>& dim_overrides) {
  std::string file = spec_path.string();
  auto root = parse_toml_text(toml_text, file);
  if (!root) return Unexpected(root.error());
  try {
    return Loader(file, spec_path.parent_path(), dim_overrides).load(*root);
  } catch (const SpecError& e) {
    return Unexpected(e.error);
  }
}

Expected<Problem> load_problem(const fs::path& path,
                               const std::map<std::string, std::int64_t>& dim_overrides) {
  fs::path spec = fs::is_directory(path) ? path / "kopt.toml" : path;
  if (!fs::exists(path))
    return Unexpected(bad_input("no such problem directory or file", path.string()));
  if (!fs::is_regular_file(spec))
    return Unexpected(bad_input("not a problem directory: kopt.toml not found", path.string()));
  auto text = read_text_file(spec);
  if (!text) return Unexpected(text.error());
  return parse_problem(*text, spec, dim_overrides);
}

}  // namespace kopt
