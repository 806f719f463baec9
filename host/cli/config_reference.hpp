// An algorithm's config reference in Markdown, made from what its describe() answers (the
// schema with each field's description and unit, the defaults, the presets), so that the
// manual's page cannot drift from the plugin: `host --describe NAME --format markdown`.
#pragma once

#include <string>

#include "plugins/algorithm_info.hpp"

namespace mlhost {

// A page: a table of every field (dotted path, type, default, allowed values, unit,
// meaning), then the presets and what each sets.
std::string config_reference_markdown(const AlgorithmInfo& algorithm);

}  // namespace mlhost
