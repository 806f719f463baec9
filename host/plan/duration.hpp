// How long a run will take, said before it starts: the work its algorithm's describe_run
// declares (mlh::RunDescription::work: so many episodes, env steps or samples, --max-steps
// counted) at the throughput the calibration measured with the plan's settings. Only where
// both are known and count the same unit (else the work alone); a step of plan_run().
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace mlhost {

// Runs expected to take longer than this get a warning before they start.
constexpr double kLongRunSeconds = 3600;

// plan["expected_duration"]: {work, unit, shorten, max_seconds (a time limit, where the config
// has one)} and, where the calibration (plan["calibration"]) has a figure in the work's unit,
// {seconds, throughput, capped}; nothing when the run description declares no work.
std::optional<nlohmann::json> expected_duration(const nlohmann::json& run_description, const nlohmann::json& calibration);

// "about 2 h 5 min", "about 40 s".
std::string duration_text(double seconds);

// The plan's line and the long-run warning: "about 2 h 5 min: 1,000,000 env_steps at 133 env_steps/s
// (calibrated); total_timesteps or --max-steps shortens it".
std::string expected_duration_text(const nlohmann::json& expected);

}  // namespace mlhost
