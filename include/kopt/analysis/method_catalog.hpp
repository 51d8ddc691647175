#pragma once
// The method catalog (catalog/methods.toml, compiled in) and SASS signature verdicts.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/tools/sass.hpp"

namespace kopt {

struct SassPattern {
  std::string text;  // as written: "LDG.128"
  std::string opcode;
  std::vector<std::string> modifiers;
  bool matches(const SassInstruction& i) const;
};
Expected<SassPattern> parse_sass_pattern(const std::string& text);

enum class Axis { compute, memory, latency };
std::string_view axis_name(Axis a);
std::optional<Axis> parse_axis(std::string_view name);

// Where a metric says a method is worth trying: strength 0 at `good`, 1 at `bad`.
struct Trigger {
  std::string metric;
  double good = 0, bad = 1;
};

struct Method {
  std::string id;
  std::string description;
  Axis axis = Axis::latency;
  int priority = 9;  // 1 first
  int min_sm = 0;
  std::optional<Trigger> trigger;      // the first (or only) trigger
  std::vector<Trigger> more_triggers;  // a list's others: the strongest one counts
  std::vector<std::string> couplings;
  std::vector<std::string> requires_features;  // hardware features (device_features) it needs
  std::string playbook;
  std::string playbook_entry;  // "cuda/<id>": the entry in playbooks/cuda.toml
  std::vector<SassPattern> all, any, none;
  // Other forms of the same method, each a signature of its own ("cp.async staging":
  // LDGSTS instead of STS): any one of them verifies the method.
  struct Form {
    std::string name;
    std::vector<SassPattern> all, any, none;
  };
  std::vector<Form> forms;
  // Instructions that show a weaker form of the method (LDG.64 for 128-bit loads): with no
  // signature met, the verdict is other_form, never missing.
  std::vector<SassPattern> related;
  int line = 0;
};

// The hardware features of an architecture that methods may require: tensor_cores (sm_70),
// bf16, tf32, cp_async (sm_80), fp8 (sm_89), tma, wgmma, clusters (sm_90).
std::vector<std::string> device_features(int sm);
inline const std::vector<std::string>& known_features() {
  static const std::vector<std::string> f = {"tensor_cores", "bf16", "tf32",  "cp_async",
                                             "fp8",          "tma",  "wgmma", "clusters"};
  return f;
}

struct MethodCatalog {
  std::string source;  // file name, for messages
  std::vector<Method> methods;
  const Method* find(const std::string& id) const;
};

Expected<MethodCatalog> parse_method_catalog(const std::string& toml_text,
                                             const std::string& source);
// The catalog compiled into kopt.
Expected<MethodCatalog> builtin_method_catalog();

// other_form: the expected instructions are absent, but a related form of the method is in
// the code (a narrower vector, say): the method landed in another shape, so it is judged by
// its timing, never called implementation_failed.
enum class SassVerdictKind { verified, missing, not_applicable, unverifiable, other_form };
std::string_view sass_verdict_name(SassVerdictKind v);

struct PatternEvidence {
  std::string pattern;
  std::string rule;  // "all", "any", "none"
  std::size_t count = 0;
};

struct MethodVerdict {
  std::string method;
  SassVerdictKind verdict = SassVerdictKind::unverifiable;
  std::string reason;  // why: which pattern is missing or forbidden, or why it could not be checked
  std::string form;    // the form that verified it, "" for the main signature
  std::vector<PatternEvidence> evidence;
};

// `function` null with `why` set: not_applicable or unverifiable, as `kind` says.
MethodVerdict verify_method(const Method& m, const SassFunction& function, int sm);
MethodVerdict unchecked_method(const Method& m, SassVerdictKind kind, std::string why);

nlohmann::json to_json(const MethodVerdict& v);

}  // namespace kopt
