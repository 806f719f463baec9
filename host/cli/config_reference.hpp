// An algorithm's description for people, made from what its describe() answers (the schema
// with each field's description and unit, the defaults, the presets), so that neither the
// terminal summary (`host --describe NAME`) nor the manual's config reference
// (`host --describe NAME --format markdown`) can drift from the plugin.
#pragma once

#include <string>

#include "plugins/algorithm_info.hpp"

namespace mlhost {

// A page: a table of every field (dotted path, type, default, allowed values, unit,
// meaning), then the presets and what each sets.
std::string config_reference_markdown(const AlgorithmInfo& algorithm);

// What `host --describe NAME` prints: the summary, the commands, the presets and every field
// with its default and meaning, one line each, for reading in a terminal.
std::string algorithm_summary_text(const AlgorithmInfo& algorithm);

}  // namespace mlhost
