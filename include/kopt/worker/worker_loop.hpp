#pragma once
// The worker's side of the protocol: reads requests, runs them, writes replies.
#include <iosfwd>

#include "kopt/backend/executor.hpp"

namespace kopt {

// Serves requests until "shutdown" (returns 0), end of input (0), or a fatal device error
// after which the context cannot be trusted (returns 3: the orchestrator starts a new worker).
// The executor is created on first use, so a worker serves C++ references without a GPU.
int run_worker_loop(std::istream& in, std::ostream& out, const ExecutorFactory& make_executor);

}  // namespace kopt
