#pragma once
// What the batch (kernelbench_batch.cpp) and its records (kernelbench_records.cpp) share.
#include <string>

#include "kopt/campaign/kernelbench_batch.hpp"

namespace kopt::campaign {

bool kernelbench_imported(const KernelbenchEntry& e);  // imported now or kept
std::string time_cell(const BaselineOutcome& b);       // "4.27 ms", a status, or "-"
std::string memory_cell(const KernelbenchEntry& e);    // "17.9 GiB of 19.1 GiB", or "-"

}  // namespace kopt::campaign
