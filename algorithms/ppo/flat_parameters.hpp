// A module's parameters moved into one flat buffer, and their gradients into another: Adam
// then steps one tensor whatever the number of layers, and the gradient norm is one reduction.
// Both update paths work on it (ppo_update.hpp with autograd, mlp_fast.hpp in plain C++).
#pragma once

#include <cstdint>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>

namespace ppo {

// Moves a module's parameters into one flat buffer (and their gradients into another).
class FlatParameters {
 public:
  explicit FlatParameters(torch::nn::Module& module);
  // Re-points the module's parameters into the buffer after something replaced their
  // storage (loading a checkpoint), keeping their current values.
  void rebind();
  // Bumps every parameter's version counter. Writes through the flat buffer (Adam) bump only
  // its counter; caches keyed on a parameter's version (the mlp's fast inference keeps
  // transposed weights) must see that the parameters changed.
  void mark_changed();
  at::Tensor& flat() { return flat_; }
  at::Tensor& grad() { return grad_; }
  int64_t numel() const { return flat_.numel(); }

 private:
  torch::nn::Module& module_;
  at::Tensor flat_, grad_;
};

}  // namespace ppo
