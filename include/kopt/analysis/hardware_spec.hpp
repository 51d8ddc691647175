#pragma once
// The hardware spec table (specs/*.toml, compiled in): per GPU board, peak rates and sizes,
// each with the document and section it comes from. A value without a source is UNKNOWN.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"

namespace kopt {

struct SpecSource {
  std::string id;     // "wp"
  std::string title;  // "NVIDIA H100 Tensor Core GPU Architecture whitepaper (V1.03)"
};

struct SpecValue {
  std::optional<double> value;  // empty: unsupported
  bool unsupported = false;     // the hardware has no such format (with a source that says so)
  std::string source;           // id into GpuSpec::sources
  std::string section;          // where in that document
  std::string note;             // e.g. "dense; 624 with sparsity"
};

struct GpuSpec {
  std::string id, name, vendor, arch;
  std::vector<std::string> match;  // substrings of the driver's device name
  std::vector<SpecSource> sources;
  std::map<std::string, SpecValue> values;  // field -> value; a missing field is UNKNOWN
  std::string file;

  const SpecValue* find(const std::string& field) const;
  // The value of a field, nullopt when unknown or unsupported.
  std::optional<double> number(const std::string& field) const;
  const SpecSource* source(const std::string& id) const;
  // "NVIDIA H100 ... whitepaper (V1.03), Table 3, H100 SXM5: SMs"
  std::string citation(const std::string& field) const;
};

// The fields of the schema, in display order, with their units.
struct SpecField {
  const char* name;
  const char* unit;
  const char* description;
};
const std::vector<SpecField>& spec_fields();

Expected<GpuSpec> parse_gpu_spec(const std::string& toml_text, const std::string& file);
// The compiled-in table (every file of specs/), parsed once.
const std::vector<GpuSpec>& builtin_gpu_specs();
// By id ("h100-sxm"), or by the driver's device name ("NVIDIA H100 80GB HBM3"): the entry
// with the longest match pattern found in the name (case-insensitive, ending a word).
const GpuSpec* find_gpu_spec(const std::string& id_or_device_name);

}  // namespace kopt
