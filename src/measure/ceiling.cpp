#include "kopt/measure/ceiling.hpp"

#include <algorithm>

namespace kopt {

Ceiling ceiling_from_times(const std::string& name, const std::string& unit, double amount,
                           const Expected<std::vector<double>>& seconds,
                           const std::string& method) {
  Ceiling c{name, unit, 0, 0, method, {}};
  if (!seconds) {
    c.error = seconds.error().message;
    return c;
  }
  std::vector<double> s = *seconds;
  if (s.empty()) {
    c.error = "no sample";
    return c;
  }
  std::sort(s.begin(), s.end());
  c.best = amount / s.front();
  c.median = amount / s[s.size() / 2];
  return c;
}

}  // namespace kopt
