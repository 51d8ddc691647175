#include "kopt/analysis/hardware_spec.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>

#include "kopt/core/toml_text.hpp"

namespace kopt {

struct EmbeddedSpecFile {
  const char* name;
  const char* text;
};
extern const EmbeddedSpecFile k_builtin_spec_files[];  // generated from specs/*.toml
extern const int k_builtin_spec_file_count;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int line_of(const toml::node* n) {
  return n ? static_cast<int>(n->source().begin.line) : 0;
}

Expected<SpecValue> parse_value(const toml::node& node, const GpuSpec& spec,
                                const std::string& field) {
  const std::string where = "values." + field;
  const toml::table* t = node.as_table();
  if (!t)
    return Unexpected(bad_input("expected { value = N, source = ID, section = TEXT }", spec.file,
                                line_of(&node), where));
  SpecValue v;
  v.unsupported = (*t)["unsupported"].value_or(false);
  if (auto n = (*t)["value"].value<double>()) v.value = *n;
  if (!v.value && !v.unsupported)
    return Unexpected(bad_input("has neither a number `value` nor `unsupported = true`", spec.file,
                                line_of(&node), where));
  v.source = (*t)["source"].value_or(std::string{});
  v.section = (*t)["section"].value_or(std::string{});
  v.note = (*t)["note"].value_or(std::string{});
  if (v.source.empty() || v.section.empty())
    return Unexpected(bad_input(
        "every value needs a `source` and a `section`; leave an unsourced value out (UNKNOWN)",
        spec.file, line_of(&node), where));
  if (!spec.source(v.source))
    return Unexpected(bad_input("source '" + v.source + "' is not in [sources]", spec.file,
                                line_of(&node), where + ".source"));
  return v;
}

}  // namespace

const std::vector<SpecField>& spec_fields() {
  static const std::vector<SpecField> fields = {
      {"sm_count", "SMs", "streaming multiprocessors (compute units on AMD)"},
      {"boost_clock_mhz", "MHz", "boost clock"},
      {"fp64_tflops", "TFLOP/s", "FP64, non-tensor"},
      {"fp32_tflops", "TFLOP/s", "FP32, non-tensor"},
      {"tf32_tflops", "TFLOP/s", "TF32 tensor, dense"},
      {"fp16_tflops", "TFLOP/s", "FP16 tensor, FP32 accumulate, dense"},
      {"bf16_tflops", "TFLOP/s", "BF16 tensor, FP32 accumulate, dense"},
      {"fp8_tflops", "TFLOP/s", "FP8 tensor, dense"},
      {"int8_tops", "TOP/s", "INT8 tensor, dense"},
      {"memory_gb", "GB", "device memory"},
      {"memory_bandwidth_gbs", "GB/s", "device memory bandwidth"},
      {"l2_kib", "KiB", "L2 cache"},
      {"smem_per_sm_kib", "KiB", "shared memory per SM (most configurable)"},
      {"register_file_kib", "KiB", "register file per SM"},
      {"max_warps_per_sm", "warps", "resident warps per SM"},
  };
  return fields;
}

const SpecValue* GpuSpec::find(const std::string& field) const {
  auto it = values.find(field);
  return it == values.end() ? nullptr : &it->second;
}

std::optional<double> GpuSpec::number(const std::string& field) const {
  const SpecValue* v = find(field);
  return v ? v->value : std::nullopt;
}

const SpecSource* GpuSpec::source(const std::string& sid) const {
  for (const auto& s : sources)
    if (s.id == sid) return &s;
  return nullptr;
}

std::string GpuSpec::citation(const std::string& field) const {
  const SpecValue* v = find(field);
  if (!v) return "UNKNOWN (no source)";
  const SpecSource* s = source(v->source);
  return (s ? s->title : v->source) + ", " + v->section +
         (v->note.empty() ? "" : " (" + v->note + ")");
}

Expected<GpuSpec> parse_gpu_spec(const std::string& toml_text, const std::string& file) {
  auto parsed = parse_toml_text(toml_text, file);
  if (!parsed) return Unexpected(parsed.error());
  toml::table& root = *parsed;
  GpuSpec spec;
  spec.file = file;
  for (const char* key : {"id", "name", "vendor", "arch"}) {
    auto v = root[key].value<std::string>();
    if (!v) return Unexpected(bad_input("missing string field", file, 1, key));
    if (std::string(key) == "id") spec.id = *v;
    if (std::string(key) == "name") spec.name = *v;
    if (std::string(key) == "vendor") spec.vendor = *v;
    if (std::string(key) == "arch") spec.arch = *v;
  }
  if (const toml::array* m = root["match"].as_array())
    for (const auto& e : *m)
      if (auto s = e.value<std::string>()) spec.match.push_back(*s);
  if (spec.match.empty())
    return Unexpected(bad_input("needs at least one device-name pattern", file, 1, "match"));
  const toml::table* sources = root["sources"].as_table();
  if (!sources) return Unexpected(bad_input("missing [sources]", file, 1, "sources"));
  for (const auto& [k, v] : *sources) {
    auto title = v.value<std::string>();
    if (!title)
      return Unexpected(bad_input("a source is a document title (string)", file, line_of(&v),
                                  "sources." + std::string(k.str())));
    spec.sources.push_back(SpecSource{std::string(k.str()), *title});
  }
  const toml::table* values = root["values"].as_table();
  if (!values) return Unexpected(bad_input("missing [values]", file, 1, "values"));
  for (const auto& [k, node] : *values) {
    std::string field(k.str());
    const auto& known = spec_fields();
    if (std::none_of(known.begin(), known.end(),
                     [&](const SpecField& f) { return field == f.name; }))
      return Unexpected(bad_input("unknown field (see specs/README.md)", file, line_of(&node),
                                  "values." + field));
    auto v = parse_value(node, spec, field);
    if (!v) return Unexpected(v.error());
    spec.values[field] = *v;
  }
  return spec;
}

const std::vector<GpuSpec>& builtin_gpu_specs() {
  static const std::vector<GpuSpec> specs = [] {
    std::vector<GpuSpec> out;
    for (int i = 0; i < k_builtin_spec_file_count; ++i) {
      auto s = parse_gpu_spec(k_builtin_spec_files[i].text,
                              std::string("specs/") + k_builtin_spec_files[i].name);
      // The table is tested in CI (tests/unit/analysis/hardware_spec_test.cpp); a broken
      // file cannot ship, so a failure here is a bug.
      if (!s) throw std::runtime_error("built-in spec table: " + s.error().to_string());
      out.push_back(std::move(*s));
    }
    return out;
  }();
  return specs;
}

const GpuSpec* find_gpu_spec(const std::string& key) {
  const auto& specs = builtin_gpu_specs();
  for (const auto& s : specs)
    if (s.id == key) return &s;
  const std::string name = lower(key);
  const GpuSpec* best = nullptr;
  std::size_t best_len = 0;
  // A pattern matches where it ends a word: "NVIDIA L4" is in "NVIDIA L4", not in "NVIDIA L40S".
  auto matches = [&](const std::string& pattern) {
    std::string p = lower(pattern);
    for (std::size_t at = name.find(p); at != std::string::npos; at = name.find(p, at + 1)) {
      std::size_t end = at + p.size();
      if (end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]))) return true;
    }
    return false;
  };
  for (const auto& s : specs)
    for (const auto& m : s.match)
      if (m.size() > best_len && matches(m)) {
        best = &s;
        best_len = m.size();
      }
  return best;
}

}  // namespace kopt
