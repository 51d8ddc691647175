// The references kopt's trusted Python process keeps on its device for a check's comparisons
// (RunJob::keep_outputs), and what happens when that process is lost with them: killed (by a
// candidate that found it: a sandbox confines files and sockets, not signals) or out of memory.
// The comparison that needed them would be kopt's environment failing and no verdict at all;
// instead the references it needs are kept again, from the jobs that kept them, and the job runs
// once more. Lost a second time while the same job ran, it is that job's doing where its code
// ran in kopt's reach.
#include <set>

#include "kopt/backend/python/python_runner.hpp"

namespace kopt {

void PythonRunner::remember_kept(const RunJob& job) {
  std::erase_if(m_keeps, [&](const RunJob& k) { return k.keep_outputs == job.keep_outputs; });
  m_keeps.push_back(job);
  if (m_keeps.size() > k_kept_remembered) m_keeps.erase(m_keeps.begin());
}

RunResult PythonRunner::after_trusted_lost(const RunJob& job, TrustedMark mark, RunResult result,
                                           const std::function<RunResult()>& again) {
  if (result.ok() || !result.environment || !trusted_lost_since(mark)) return result;
  std::set<std::string> needed;
  for (const auto& c : job.compare) {
    if (!c.expected.key.empty()) needed.insert(c.expected.key);
    if (c.exact && !c.exact->key.empty()) needed.insert(c.exact->key);
  }
  // In the order they were kept: an fp64 reference measures its distance to the f32 one that
  // was kept before it.
  std::vector<const RunJob*> keeps;
  for (const auto& k : m_keeps)
    if (needed.erase(k.keep_outputs) > 0) keeps.push_back(&k);
  if (keeps.empty() || !needed.empty()) return result;  // one never kept here: as it stands
  for (const RunJob* k : keeps) {
    RunResult kept = run_once(*k, {});
    if (!kept.ok() || !kept.kept) return result;  // no room for them now: as it stands
  }
  const TrustedMark second = trusted_mark();
  RunResult retried = again();
  if (retried.ok() || !retried.environment || !trusted_lost_since(second)) return retried;
  // Lost again while the same job ran: a candidate's process or a solve() library's host code
  // did it (signalled kopt's process, or ran the machine out of memory). A cubin has no host
  // code: its loss stays the environment's.
  if (is_candidate(job.kind) || job.kind == ModuleKind::solve_library) {
    retried.environment = false;
    retried.status = RunStatus::crash;
    retried.error =
        "kopt's trusted Python process was lost while this ran or was compared, twice, its "
        "references kept again in between: a candidate that signals kopt's processes or runs "
        "the machine out of memory fails (" +
        retried.error + ")";
  }
  return retried;
}

}  // namespace kopt
