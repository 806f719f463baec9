// What a training step computes, as far as its speed goes: the config without the fields the
// algorithm's schema marks "speed_neutral" (mlh/config_table.hpp: learning rates, schedule
// lengths, seeds, evaluation sizes). Calibrations and device measurements are kept per
// workload, so a run that changes only such fields finds them, and one that changes its
// model, batch or episode shape measures again.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mlhost {

// `config` without its speed-neutral values (nested objects follow the schema's "properties").
nlohmann::json step_workload(const nlohmann::json& schema, const nlohmann::json& config);

// The hex SHA-256 of step_workload().
std::string workload_hash(const nlohmann::json& schema, const nlohmann::json& config);

}  // namespace mlhost
