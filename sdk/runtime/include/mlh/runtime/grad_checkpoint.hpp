// Gradient checkpointing: run part of a model without keeping its activations, and recompute
// them in the backward pass. Memory drops to the part's inputs and outputs; compute grows by
// one extra forward of the part. Gradients equal the plain path's: the recomputation runs
// with the random state (dropout) and autocast state of the original forward.
//
// As PyTorch's reentrant torch.utils.checkpoint: the parameters the function uses are not
// inputs of the checkpoint node; the recomputation's own backward accumulates their .grad.
// So drive training with loss.backward() (torch::autograd::grad would still write those
// parameters' .grad). The function must be deterministic apart from the random generators
// and must not change state the recomputation reads.
#pragma once

#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

namespace mlh::rt {

using CheckpointFn = std::function<at::Tensor(const at::Tensor&)>;
using CheckpointFnN = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

// fn(input), keeping only `input` for the backward pass. Under no-grad it is a plain call.
at::Tensor checkpoint(const CheckpointFn& fn, const at::Tensor& input);

// Several inputs and outputs. Inputs must be defined tensors.
std::vector<at::Tensor> checkpoint(const CheckpointFnN& fn, const std::vector<at::Tensor>& inputs);

// checkpoint(fn, input) when `enabled` (the plan's gradient_checkpointing), else fn(input).
at::Tensor maybe_checkpoint(bool enabled, const CheckpointFn& fn, const at::Tensor& input);

}  // namespace mlh::rt
