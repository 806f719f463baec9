// CSV fields as RFC 4180 writes them: quoted when they hold a comma, a quote or a line break,
// a quote doubled. For the run's metrics.csv and a sweep's tables.
#pragma once

#include <string>

namespace mlhost {

inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace mlhost
