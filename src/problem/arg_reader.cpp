#include "arg_reader.hpp"

#include "kopt/problem/tensor_map.hpp"
#include "toml_reader.hpp"

namespace kopt::detail {
namespace {

// { tensor_map = "A", box = ["BM", "BK"], swizzle = 128 }: the box is checked at each point
// (resolve_tensor_map); here its shape and the swizzle.
void read_tensor_map(TomlReader& ar, ArgSpec& a, const Problem& p,
                     const std::set<std::string>& names) {
  a.tensor = ar.get_string("tensor_map");
  const TensorSpec* t = p.find_tensor(a.tensor);
  if (!t) ar.fail("tensor_map", "unknown tensor '" + a.tensor + "'");
  if (t->shape.size() > k_tensor_map_max_rank)
    ar.fail("tensor_map", "a tensor map has 1 to 5 dims; tensor '" + a.tensor + "' has " +
                              std::to_string(t->shape.size()));
  if (!tensor_map_supports(t->dtype))
    ar.fail("tensor_map", "TMA has no element type for " + std::string(dtype_name(t->dtype)));
  TensorMapSpec map;
  const toml::node* box = ar.node("box");
  if (!box) ar.fail("box", ar.missing("box"));
  const toml::array* arr = box->as_array();
  if (!arr || arr->size() != t->shape.size())
    ar.fail("box", "expected " + std::to_string(t->shape.size()) +
                       " extents, one per dim of tensor '" + a.tensor +
                       "' (outermost first, as its shape)");
  for (std::size_t d = 0; d < arr->size(); ++d) {
    std::string field = indexed(ar.field("box"), d);
    const toml::node& item = *arr->get(d);
    map.box.push_back(parse_spec_expr(ar.expr_text(item, field), ar.file(), line_of(item), field,
                                      names, "known dims and params"));
  }
  if (ar.has("swizzle")) {
    std::int64_t s = ar.get_int("swizzle");
    if (!is_tensor_map_swizzle(s))
      ar.fail("swizzle", "expected 0, 32, 64 or 128 (bytes), got " + std::to_string(s));
    map.swizzle = static_cast<int>(s);
  }
  a.tensor_map = std::move(map);
}

}  // namespace

Expr parse_spec_expr(const std::string& text, const std::string& file, int line,
                     const std::string& field, const std::set<std::string>& allowed,
                     const std::string& allowed_what) {
  auto e = Expr::parse(text);
  if (!e) throw SpecError{bad_input(e.error().message, file, line, field)};
  for (const auto& name : e->names())
    if (!allowed.count(name)) {
      std::string known;
      for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
      throw SpecError{bad_input("unknown name '" + name + "' in expression '" + text + "' (" +
                                    allowed_what + ": " + (known.empty() ? "none" : known) + ")",
                                file, line, field)};
    }
  return *e;
}

ArgSpec read_arg(const toml::node& n, const std::string& field, const Problem& p,
                 const std::set<std::string>& names, const std::string& file) {
  ArgSpec a;
  a.where = {line_of(n), field};
  std::string text;
  if (const toml::table* t = n.as_table()) {
    TomlReader ar(*t, field, file);
    if (ar.has("tensor_map")) {
      read_tensor_map(ar, a, p, names);
      ar.reject_unknown();
      return a;
    }
    if (ar.has("tensor")) {
      a.tensor = ar.get_string("tensor");
      if (!p.find_tensor(a.tensor)) ar.fail("tensor", "unknown tensor '" + a.tensor + "'");
      ar.reject_unknown();
      return a;
    }
    const toml::node* e = ar.node("expr");
    if (!e)
      throw SpecError{
          bad_input("expected { tensor = ... }, { tensor_map = ..., box = [...] } or { expr = ..., "
                    "dtype = ... }",
                    file, line_of(n), field)};
    text = ar.expr_text(*e, ar.field("expr"));
    std::string dtype = ar.get_string("dtype", "i32");
    auto dt = parse_dtype(dtype);
    if (!dt) ar.fail("dtype", "unknown dtype '" + dtype + "' (known: " + known_dtypes() + ")");
    a.scalar_dtype = *dt;
    ar.reject_unknown();
  } else {
    text = TomlReader(toml::table{}, "", file).expr_text(n, field);
    if (p.find_tensor(text)) {
      a.tensor = text;
      return a;
    }
  }
  a.scalar =
      parse_spec_expr(text, file, line_of(n), field, names, "not a tensor; known dims and params");
  return a;
}

std::vector<IncludeDir> read_include_dirs(TomlReader& kr) {
  std::vector<IncludeDir> out;
  const toml::node* n = kr.node("include_dirs");
  if (!n) return out;
  const toml::array* arr = n->as_array();
  if (!arr)
    kr.fail("include_dirs",
            "expected an array of folders (strings or { python_package, path } tables)");
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const toml::node& item = *arr->get(i);
    std::string field = indexed(kr.field("include_dirs"), i);
    IncludeDir d;
    d.where = {line_of(item), field};
    if (auto text = item.value<std::string>()) {
      d.path = *text;
    } else if (const toml::table* t = item.as_table()) {
      TomlReader ir(*t, field, kr.file());
      d.python_package = ir.get_string("python_package");
      d.path = ir.get_string("path", "");
      d.pip = ir.get_string("pip", "");
      ir.reject_unknown();
    } else {
      kr.fail_at(item, field,
                 "expected a folder (a string) or { python_package = ..., path = ... }");
    }
    if (d.path.empty() && d.python_package.empty()) kr.fail_at(item, field, "an empty folder name");
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace kopt::detail
