// The plan as people read it: every value beside where it came from, one line each, and what
// does nothing on this run (printed before a run and by --print-plan).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mlhost {

std::string plan_to_text(const nlohmann::json& plan);

}  // namespace mlhost
