#pragma once
// Internal to kernelbench_cost: the KernelBench calls whose cost is a count per element (of
// their result, or of what they read), and those that do no arithmetic at all.
#include <string_view>

namespace kopt::detail {

struct ElementCost {
  int flops_per_element;
  bool per_result;  // else per element of the first argument (what a reduction or norm reads)
  std::string_view family;
};

// The per-element cost of a call of this name (an in-place call's trailing '_' dropped); null
// where it has none.
const ElementCost* element_cost(std::string_view name);

// Whether a call of this name does no arithmetic: views and copies, concatenation, masks,
// creation, casts.
bool is_free_call(std::string_view name);

}  // namespace kopt::detail
