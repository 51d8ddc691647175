#include "kopt/problem/loader.hpp"

#include <set>

#include "arg_reader.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/suggest.hpp"
#include "kopt/core/toml_text.hpp"
#include "kopt/problem/param_space.hpp"
#include "loader_impl.hpp"

namespace kopt::detail {

Problem Loader::load(const toml::table& root) {
  Problem p;
  p.dir = m_dir;
  p.spec_path = m_file;
  TomlReader r(root, "", m_file);
  p.name = r.get_string("name");
  p.family = r.get_string("family", p.name);
  p.description = r.get_string("description", "");
  if (r.has("precision")) p.precision = read_precision(r);
  read_dims(r, p);
  read_tensors(r, p);
  read_cost(r, p);
  read_tolerances(r, p);
  read_check(r, p);
  read_axes(r, p);
  read_shapes(r, p);
  read_goal(r, p);
  read_reference(r, p);
  read_kernels(r, p);
  r.reject_unknown();
  return p;
}

Precision Loader::read_precision(TomlReader& r) {
  std::string name = r.get_string("precision");
  auto p = parse_precision(name);
  if (!p)
    r.fail("precision", "unknown precision '" + name + "' (known: " + known_precisions() +
                            "): the lowest precision the kernels may multiply in");
  return *p;
}

[[noreturn]] void Loader::fail(int line, const std::string& field, const std::string& why) const {
  throw SpecError{bad_input(why, m_file, line, field)};
}

const toml::table& Loader::table_at(TomlReader& r, const std::string& key, bool required) {
  const toml::node* n = r.node(key);
  if (!n) {
    if (required) fail(r.table_line(), r.field(key), "missing required table");
    static const toml::table empty;
    return empty;
  }
  if (!n->is_table()) r.fail(key, "expected a table");
  return *n->as_table();
}

Expr Loader::parse_expr(const std::string& text, int line, const std::string& field,
                        const std::set<std::string>& allowed, const std::string& allowed_what) {
  return detail::parse_spec_expr(text, m_file, line, field, allowed, allowed_what);
}

void Loader::read_dims(TomlReader& r, Problem& p) {
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
    if (!m_dim_names.count(name)) {
      std::vector<std::string> known(m_dim_names.begin(), m_dim_names.end());
      std::string list;
      for (const auto& d : known) list += (list.empty() ? "" : ", ") + d;
      fail(r.line("dims"), "dims",
           "--dim " + name + "=" + std::to_string(value) + ": no such dim" +
               did_you_mean(name, known) + " (the problem's dims: " + list + ")");
    }
}

InitSpec Loader::read_init(const toml::node& n, const std::string& field, DType dtype) {
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
  const std::optional<InitKind> known = parse_init_kind(kind);
  if (!known)
    fail(line_of(n), field,
         "unknown init kind '" + kind + "' (known: normal, uniform, randint, arange, constant)");
  if (*known == InitKind::normal) {
    init = {InitKind::normal, ir.get_number("mean", 0.0), ir.get_number("std", 1.0)};
    if (init.b <= 0) fail(line_of(n), field + ".std", "must be > 0");
  } else if (*known == InitKind::uniform) {
    init = {InitKind::uniform, ir.get_number("low", -1.0), ir.get_number("high", 1.0)};
    if (!(init.a < init.b)) fail(line_of(n), field, "uniform needs low < high");
  } else if (*known == InitKind::randint) {
    double hi_default = dtype == DType::u8 ? 256.0 : 100.0;
    init = {InitKind::randint, ir.get_number("low", 0.0), ir.get_number("high", hi_default)};
    if (!(init.a < init.b)) fail(line_of(n), field, "randint needs low < high");
  } else if (*known == InitKind::arange) {
    init = {InitKind::arange, ir.get_number("start", 0.0), ir.get_number("step", 1.0)};
  } else {
    init = {InitKind::constant, ir.get_number("value", 1.0), 0.0};
  }
  ir.reject_unknown();
  return init;
}

Tolerance Loader::read_tolerance(const toml::node& n, const std::string& field, Tolerance base) {
  const toml::table* t = n.as_table();
  if (!t) fail(line_of(n), field, "expected a table { atol = ..., rtol = ... }");
  TomlReader tr(*t, field, m_file);
  Tolerance tol{tr.get_number("atol", base.atol), tr.get_number("rtol", base.rtol)};
  if (tol.atol < 0 || tol.rtol < 0) fail(line_of(n), field, "tolerances must be >= 0");
  tr.reject_unknown();
  return tol;
}

void Loader::read_tensors(TomlReader& r, Problem& p) {
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

void Loader::read_shape(TomlReader& tr, TensorSpec& ts, const Problem& p) {
  const toml::node* n = tr.node("shape");
  if (!n) fail(ts.where.line, tr.field("shape"), tr.missing("shape"));
  const toml::array* arr = n->as_array();
  if (!arr || arr->empty()) tr.fail("shape", "expected a non-empty array of expressions");
  Scope dims = p.dim_scope();
  for (std::size_t d = 0; d < arr->size(); ++d) {
    std::string field = indexed(tr.field("shape"), d);
    const toml::node& item = *arr->get(d);
    Expr e = parse_expr(tr.expr_text(item, field), line_of(item), field, m_dim_names, "known dims");
    auto v = e.evaluate_int(dims);
    if (!v) fail(line_of(item), field, v.error().message);
    if (*v <= 0) fail(line_of(item), field, "extent must be > 0, got " + std::to_string(*v));
    ts.shape.push_back(e);
  }
}

void Loader::read_cost(TomlReader& r, Problem& p) {
  if (!r.has("cost")) return;
  TomlReader cr(table_at(r, "cost", true), "cost", m_file);
  CostSpec cost;
  for (const char* key : {"flops", "bytes"}) {
    // flops may be left out where nobody knows them yet (an imported operator kopt has
    // no formula for): the roofline then places the kernel by its bytes alone.
    const toml::node* n = cr.node(key);
    if (!n && std::string(key) == "flops") continue;
    if (!n) fail(line_of(*r.node("cost")), cr.field(key), cr.missing(key));
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

void Loader::read_check(TomlReader& r, Problem& p) {
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
  if (const toml::node* b = cr.node("boundary_shapes")) {
    if (!b->is_boolean()) fail(line_of(*b), "check.boundary_shapes", "expected true or false");
    p.boundary_shapes = b->as_boolean()->get();
  }
  cr.reject_unknown();
}

void Loader::read_axes(TomlReader& r, Problem& p) {
  if (!r.has("axes")) return;
  const toml::table& t = table_at(r, "axes", true);
  for (const auto& [k, v] : t) {
    std::string name(k.str()), field = "axes." + name;
    if (name == "zip" && !m_dim_names.count(name)) {
      read_zips(v, p);
      continue;
    }
    if (!m_dim_names.count(name)) fail(line_of(v), field, "no such dim in [dims]");
    const toml::array* values = v.as_array();
    if (!values || values->empty())
      fail(line_of(v), field, "expected a non-empty array of integers > 0, such as [1, 16, 4096]");
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < values->size(); ++i) {
      const toml::node* x = values->get(i);
      if (!x->is_integer() || x->as_integer()->get() <= 0)
        fail(line_of(*x), indexed(field, i), "expected an integer > 0");
      out.push_back(x->as_integer()->get());
    }
    p.axes.emplace_back(name, std::move(out));
  }
  for (std::size_t z = 0; z < p.axis_zips.size(); ++z) {
    std::size_t length = 0;
    for (const auto& name : p.axis_zips[z]) {
      auto a = std::find_if(p.axes.begin(), p.axes.end(),
                            [&](const auto& x) { return x.first == name; });
      if (a == p.axes.end())
        fail(line_of(*t.get("zip")), indexed("axes.zip", z), name + " is no axis of [axes]");
      if (length && a->second.size() != length)
        fail(line_of(*t.get("zip")), indexed("axes.zip", z),
             "zipped axes take their values together: " + name + " has " +
                 std::to_string(a->second.size()) + " values, the axis before it " +
                 std::to_string(length));
      length = a->second.size();
    }
  }
}

void Loader::read_zips(const toml::node& v, Problem& p) {
  const toml::array* zips = v.as_array();
  if (!zips)
    fail(line_of(v), "axes.zip", "expected a list of axis groups, such as [[\"M\", \"N\"]]");
  for (std::size_t i = 0; i < zips->size(); ++i) {
    const toml::array* group = zips->get(i)->as_array();
    if (!group || group->size() < 2)
      fail(line_of(*zips->get(i)), indexed("axes.zip", i),
           "expected two axis names or more, such as [\"M\", \"N\"]");
    std::vector<std::string> names;
    for (std::size_t j = 0; j < group->size(); ++j) {
      const auto* name = group->get(j)->as_string();
      if (!name) fail(line_of(*group->get(j)), indexed("axes.zip", i), "expected an axis name");
      for (const auto& other : p.axis_zips)
        if (std::find(other.begin(), other.end(), name->get()) != other.end())
          fail(line_of(*group->get(j)), indexed("axes.zip", i), name->get() + " is zipped twice");
      names.push_back(name->get());
    }
    p.axis_zips.push_back(std::move(names));
  }
}

void Loader::read_shapes(TomlReader& r, Problem& p) {
  if (!r.has("shapes")) return;
  const toml::table& t = table_at(r, "shapes", true);
  for (const auto& [k, v] : t) {
    std::string name(k.str()), field = "shapes." + name;
    const toml::table* dims = v.as_table();
    if (!dims || dims->empty())
      fail(line_of(v), field, "expected a table of dims, such as { M = 1 }");
    Problem::NamedShape shape{name, {}};
    for (const auto& [dk, dv] : *dims) {
      std::string dim(dk.str());
      if (!m_dim_names.count(dim)) fail(line_of(dv), field + "." + dim, "no such dim in [dims]");
      if (!dv.is_integer() || dv.as_integer()->get() <= 0)
        fail(line_of(dv), field + "." + dim, "expected an integer > 0");
      shape.dims.emplace_back(dim, dv.as_integer()->get());
    }
    p.shapes.push_back(std::move(shape));
  }
}

void Loader::read_goal(TomlReader& r, Problem& p) {
  if (!r.has("goal")) return;
  TomlReader gr(table_at(r, "goal", true), "goal", m_file);
  if (const toml::node* k = gr.node("kind")) {
    const auto* kind = k->as_string();
    if (!kind || (kind->get() != "latency" && kind->get() != "throughput"))
      fail(line_of(*k), "goal.kind", "expected \"latency\" or \"throughput\"");
    p.goal = kind->get() == "latency" ? Problem::Goal::latency : Problem::Goal::throughput;
  }
  if (const toml::node* w = gr.node("weights")) {
    const toml::table* weights = w->as_table();
    if (!weights) fail(line_of(*w), "goal.weights", "expected a table: shape name = weight");
    for (const auto& [wk, wv] : *weights) {
      double x = wv.is_integer()          ? double(wv.as_integer()->get())
                 : wv.is_floating_point() ? wv.as_floating_point()->get()
                                          : -1;
      if (!(x > 0))
        fail(line_of(wv), "goal.weights." + std::string(wk.str()), "expected a number > 0");
      p.goal_weights[std::string(wk.str())] = x;
    }
  }
  gr.reject_unknown();
}

void Loader::read_tolerances(TomlReader& r, Problem& p) {
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

}  // namespace kopt::detail

namespace kopt {
namespace fs = std::filesystem;
using detail::Loader;
using detail::SpecError;

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
