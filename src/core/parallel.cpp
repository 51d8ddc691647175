#include "kopt/core/parallel.hpp"

namespace kopt {

unsigned hardware_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace kopt
