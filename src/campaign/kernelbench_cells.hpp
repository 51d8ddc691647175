#pragma once
// What the batch (kernelbench_batch.cpp) and its records (kernelbench_records.cpp) share.
#include <filesystem>
#include <string>

#include "kopt/campaign/kernelbench_batch.hpp"

namespace kopt::campaign {

bool kernelbench_imported(const KernelbenchEntry& e);   // imported now or kept
std::string time_cell(const TimedOutcome& b);           // "4.27 ms", a status, or "-"
std::string memory_cell(const KernelbenchEntry& e);     // "17.9 GiB of 19.1 GiB", or "-"
std::string candidate_cell(const CandidateOutcome& c);  // "passed (1.23 ms)", "failed", "-"
std::string import_cell(const KernelbenchEntry& e);     // "0.3", or "5.8 (5.1 start)"

// A problem's memory (kernelbench_memory.cpp): its JSON, and what kopt's Python processes
// reported (WorkerClient::python_memory) folded into it.
nlohmann::json to_json(const GpuMemoryUse& m);
GpuMemoryUse memory_from_json(const nlohmann::json& j);
void read_process_memory(GpuMemoryUse& m, const nlohmann::json& reply);

// The candidates (kernelbench_candidate.cpp). mark_candidate: the entry's candidate is the file
// of its name under `candidates`, to evaluate (not_run) unless that content was evaluated;
// none where there is no such file; left alone when `candidates` is empty.
void mark_candidate(KernelbenchEntry& e, const std::filesystem::path& candidates);
bool candidate_due(const KernelbenchEntry& e, const KernelbenchBatchOptions& o);
// Checks and times it against the problem in `dir` (its reference ok): its verdict, with the
// cause where it failed. An environment failure is the Error, its verdict left not_run.
Expected<void> evaluate_candidate(KernelbenchEntry& e, const std::filesystem::path& dir,
                                  const KernelbenchBatchOptions& o, evaluate::CheckContext ctx);

}  // namespace kopt::campaign
