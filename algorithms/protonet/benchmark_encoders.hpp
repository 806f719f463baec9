// The benchmark's encoder comparison (benchmark.compare_encoders): Conv-4 and ResNet-12
// training the same small episode on 28x28x1 and on 84x84x3 images, timed in one run so their
// ratio holds for this machine as it is now.
#pragma once

#include <vector>

#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <nlohmann/json.hpp>

#include "config.hpp"

namespace protonet {

// Appends the four timings (images/s) to `results` and their notes to `notes`; returns
// {"28x28x1": {"conv4": images/s, "resnet12": images/s, "conv4_over_resnet12": ratio}, ...}.
nlohmann::json compare_encoders(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan,
                                std::vector<mlh::rt::BenchmarkResult>& results, nlohmann::json& notes);

}  // namespace protonet
