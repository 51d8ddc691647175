#pragma once
// What precision a kernel's matrix instructions multiply in, read from its SASS: the operand
// type of every HMMA, HGMMA, QGMMA, IMMA, DMMA (and the Blackwell UTC forms). A kernel of an f32
// problem whose tensor cores take tf32, bf16, f16 or fp8 operands computes another, coarser
// problem however small its error looks under a loose tolerance.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/problem/precision.hpp"
#include "kopt/tools/sass.hpp"

namespace kopt {

// The operand precision of one matrix instruction; none for any other instruction (and for
// one that never runs, `@!PT`).
std::optional<Precision> mma_operand_precision(const SassInstruction& i);

// One form of matrix instruction in one function, e.g. HMMA.1688.F32.TF32 x 12 in "gemm".
struct MmaForm {
  std::string function;
  std::string form;  // opcode and modifiers as the disassembler prints them
  Precision operands = Precision::f32;
  std::size_t count = 0;
};

struct PrecisionFinding {
  Precision allowed = Precision::f32;
  std::string allowed_from;         // AllowedPrecision::from
  bool declared = false;            // AllowedPrecision::declared
  std::vector<MmaForm> forms;       // every matrix instruction form found, lowest precision first
  std::optional<Precision> lowest;  // of `forms`; none: no matrix instruction at all
  bool below() const { return lowest && !precision_at_least(*lowest, allowed); }
  // "multiplies in tf32 (HMMA.1688.F32.TF32 x 4 in mma_tf32) where the problem is f32 (...)"
  std::string explain() const;
};

// Every matrix instruction form of the functions, counted.
std::vector<MmaForm> mma_forms(const std::vector<SassFunction>& functions);
PrecisionFinding judge_precision(std::vector<MmaForm> forms, const AllowedPrecision& allowed);
nlohmann::json to_json(const PrecisionFinding& f);
// The forms alone (what a build cache keeps beside a binary), and back; nullopt: unreadable.
nlohmann::json forms_to_json(const std::vector<MmaForm>& forms);
std::optional<std::vector<MmaForm>> forms_from_json(const nlohmann::json& j);

}  // namespace kopt
