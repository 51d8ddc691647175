// The kernels and the reference of kopt.toml (the Loader of loader_impl.hpp): sources and
// their languages, launch shapes, params and constraints, methods, solve() signatures, arch
// targets.
#include <set>

#include "arg_reader.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/arch_target.hpp"
#include "kopt/problem/param_space.hpp"
#include "kopt/problem/solve_abi.hpp"
#include "loader_impl.hpp"

namespace kopt::detail {

std::array<Expr, 3> Loader::read_dim3(TomlReader& kr, const std::string& key, bool required,
                                      const std::set<std::string>& names, SourceRef& where) {
  std::array<Expr, 3> out{Expr::constant(1), Expr::constant(1), Expr::constant(1)};
  const toml::node* n = kr.node(key);
  where = {n ? line_of(*n) : kr.table_line(), kr.field(key)};
  if (!n) {
    if (required) fail(kr.table_line(), kr.field(key), kr.missing(key));
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

void Loader::read_params(TomlReader& kr, KernelSpec& k) {
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

void Loader::read_methods(TomlReader& kr, KernelSpec& k) {
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

std::map<std::string, std::int64_t> Loader::read_assignments(const KernelSpec& k,
                                                             const std::string& text, int line,
                                                             const std::string& field) {
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
    if (!ps) fail(line, field, "'" + item + "': expected PARAM=VALUE with a param of this kernel");
    std::int64_t value = 0;
    try {
      value = std::stoll(item.substr(eq + 1));
    } catch (const std::exception&) {
      fail(line, field, "'" + item + "': the value must be an integer");
    }
    if (std::find(ps->values.begin(), ps->values.end(), value) == ps->values.end())
      fail(line, field,
           "'" + item + "': " + std::to_string(value) + " is not a declared value of " + ps->name);
    out[ps->name] = value;
  }
  if (out.empty()) fail(line, field, "expected at least one PARAM=VALUE");
  return out;
}

void Loader::read_sources(TomlReader& kr, KernelSpec& k, bool is_reference) {
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

void Loader::read_solve_args(TomlReader& kr, KernelSpec& k, const Problem& p) {
  const std::string src = (m_dir / k.source).string();
  if (k.sources.size() != 1 || kernel_language_of(k.source) != KernelLanguage::cuda)
    kr.fail("source", "a solve() kernel is one .cu file");
  for (const char* key : {"args", "grid", "block", "shared_mem"})
    if (kr.node(key))
      fail(line_of(*kr.node(key)), kr.field(key),
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
      // A pointer without const may still be an input: the skills' solve() template declares
      // none const. kopt checks after every run that no input changed.
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

void Loader::read_constraints(TomlReader& kr, KernelSpec& k, const std::set<std::string>& names) {
  auto texts = kr.get_string_list("constraints");
  for (std::size_t i = 0; i < texts.size(); ++i) {
    int line = line_of(*kr.node("constraints")->as_array()->get(i));
    std::string cf = indexed(kr.field("constraints"), i);
    k.constraints.push_back(
        {parse_expr(texts[i], line, cf, names, "known dims and params"), {line, cf}});
  }
}

std::string Loader::not_cuda(const KernelSpec& k, const Problem& p, bool is_reference,
                             bool every_source) const {
  if (is_reference && p.reference.kind != ReferenceKind::cuda)
    return "the reference is of kind \"" + std::string(reference_kind_name(p.reference.kind)) +
           "\"";
  bool any_cuda = false;
  for (const auto& s : k.sources) {
    KernelLanguage lang = language_of(s);
    any_cuda = any_cuda || lang == KernelLanguage::cuda;
    if (every_source && lang != KernelLanguage::cuda)
      return "kernel '" + k.name + "' has a source in " + std::string(kernel_language_name(lang)) +
             " (" + s.string() + ")";
  }
  return any_cuda ? "" : "kernel '" + k.name + "' has no CUDA (.cu) source";
}

void Loader::read_arch(TomlReader& kr, KernelSpec& k, const Problem& p, bool is_reference) {
  k.arch = kr.get_string("arch");
  k.arch_where = {kr.line("arch"), kr.field("arch")};
  if (!is_arch_target(k.arch))
    kr.fail("arch", "unknown arch '" + k.arch +
                        "': expected sm_<digits>, optionally with an a or f suffix (sm_90a, "
                        "sm_100a, sm_100f)");
  if (std::string why = not_cuda(k, p, is_reference, false); !why.empty())
    kr.fail("arch", "an arch target is for CUDA kernels: " + why);
}

KernelSpec Loader::read_kernel(const toml::table& t, const std::string& field, const Problem& p,
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
  if (!is_reference && kr.has("precision")) k.precision = read_precision(kr);
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
      k.args.push_back(detail::read_arg(*args->as_array()->get(i), indexed(kr.field("args"), i), p,
                                        names, m_file));
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
      k.launch.shared_mem = parse_expr(kr.expr_text(*smem, kr.field("shared_mem")), line_of(*smem),
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

void Loader::read_reference(TomlReader& r, Problem& p) {
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

void Loader::read_kernels(TomlReader& r, Problem& p) {
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
      fail(line_of(*t), indexed("kernels", i) + ".name", "duplicate kernel name '" + k.name + "'");
    p.kernels.push_back(std::move(k));
    // A space in which no point satisfies the constraints is an error of the spec.
    auto point = default_point(p, p.kernels.back());
    if (!point) throw SpecError{point.error()};
  }
}

}  // namespace kopt::detail
