// The execution plan: how a run uses the chosen device. This first version fixes the
// device, precision and thread counts; the data-driven auto-configuration (batch size,
// memory, presets) extends it.
#pragma once

#include <nlohmann/json.hpp>

#include "device.hpp"

namespace mlhost {

// Fields (docs/plan.md): device, torch_device, device_class, precision,
// threads.intra_op, threads.inter_op, and "reasons": why each value was chosen.
nlohmann::json make_plan(const Device& device);

}  // namespace mlhost
