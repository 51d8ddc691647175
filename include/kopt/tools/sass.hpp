#pragma once
// SASS as data: instructions parsed from `nvdisasm -c` or `cuobjdump -sass` text into
// per-function streams (address, predicate, opcode, modifiers, operands) — never a text grep.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/core/process.hpp"

namespace kopt {

struct SassInstruction {
  std::uint32_t address = 0;
  std::string predicate;               // "@P0", "@!PT", "" when none
  std::string opcode;                  // "LDG"
  std::vector<std::string> modifiers;  // {"E", "128", "CONSTANT"}
  std::string operands;                // "R4, desc[UR8][R4.64]"

  bool has_modifier(const std::string& m) const;
  // Guarded by !PT (always false): ptxas places such instructions (`@!PT LDS RZ, [RZ]` after
  // each LDGSTS) and they never run, so they are no evidence of anything.
  bool never_runs() const { return predicate == "@!PT"; }
};

struct SassFunction {
  std::string name;  // the symbol, e.g. "softmax_tuned" or "_Z5scaleILi4EEvPf"
  std::vector<SassInstruction> instructions;
};

// Parses either tool's text; functions appear in the order of the dump.
std::vector<SassFunction> parse_sass(const std::string& text);

// The function named `name`, or nullptr.
const SassFunction* find_function(const std::vector<SassFunction>& functions,
                                  const std::string& name);

// Disassembles a cubin with nvdisasm (preferred: $KOPT_NVDISASM, PATH, the CUDA toolkit) or
// cuobjdump -sass. An environment error when neither tool is there. A host library with
// embedded device code (a solve() library) takes cuobjdump, which reads its fatbinary.
struct Disassembly {
  std::string tool;  // path of the program used
  std::string text;
};
Expected<Disassembly> disassemble(CommandRunner& runner, const std::filesystem::path& cubin,
                                  bool host_library = false);

// The device code of a solve() library as one function: every kernel it embeds, in order
// (named "N kernels: a, b, ..."), so that the methods' SASS proofs read all of them.
SassFunction merge_functions(const std::vector<SassFunction>& functions);

}  // namespace kopt
