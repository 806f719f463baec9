// The plan as people read it: every value beside where it came from, one line each, and what
// does nothing on this run (printed before a run and by --print-plan).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace mlhost {

std::string plan_to_text(const nlohmann::json& plan);

// 1234567 -> "1,234,567" (parameter counts, measured speeds)
std::string with_thousands(int64_t n);

}  // namespace mlhost
