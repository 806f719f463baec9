// Model FLOPs of TRM (the matmuls; norms, activations and the softmax are left out, as is
// usual for model FLOPs utilization): per sequence and ACT step, for a forward pass and for a
// training step (the no-grad cycles forward only; the grad cycle forward and backward, the
// backward costing twice the forward).
#pragma once

#include "model/model_config.hpp"

namespace trm {

// One net() call on one sequence (all L layers).
double net_call_flops(const ModelConfig& config);
// Inference: every net call of one ACT step, plus the heads.
double forward_flops_per_step(const ModelConfig& config);
// Training: forward_flops_per_step + 2 x the grad cycle's forward (and the heads'); with
// !no_act_continue, the extra no-grad pass for the continue target.
double train_flops_per_step(const ModelConfig& config);

}  // namespace trm
