#pragma once
// What one kernel's machine code contains: instruction counts by class, memory accesses by
// width, and the share of 128-bit global loads.
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kopt/tools/sass.hpp"

namespace kopt {

struct SassFacts {
  std::string function;
  std::size_t instructions = 0;
  std::map<std::string, std::size_t> classes;  // "global_load", "shared_store", "tensor_core", ...
  std::map<std::string, std::size_t> opcodes;  // every opcode
  std::map<int, std::size_t> global_loads_by_width;  // bits -> count
  std::map<int, std::size_t> global_stores_by_width;
  std::map<int, std::size_t> shared_loads_by_width;
  std::map<int, std::size_t> shared_stores_by_width;
  double share_128bit_global_loads = 0;  // of all global loads, 0 when there are none
};

// The access width in bits of a load or store, from its modifiers (32 when none says).
int access_width_bits(const SassInstruction& i);
// The class of an opcode ("" when kopt does not classify it).
std::string instruction_class(const SassInstruction& i);

SassFacts sass_facts(const SassFunction& f);
nlohmann::json to_json(const SassFacts& f);

// Opcodes whose count changed between two builds of a kernel (appeared, disappeared, more, fewer).
struct SassDiffEntry {
  std::string key;  // opcode, with its width for memory accesses: "LDG.128"
  std::size_t before = 0;
  std::size_t after = 0;
};
std::vector<SassDiffEntry> sass_diff(const SassFunction& before, const SassFunction& after);
std::string diff_key(const SassInstruction& i);

}  // namespace kopt
