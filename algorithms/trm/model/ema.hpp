// Exponential moving average of a model's weights, as the reference's EMAHelper (models/ema.py,
// used with ema_rate 0.999): a shadow copy of every parameter that requires grad, updated after
// each optimizer step with shadow = rate * shadow + (1 - rate) * param. Buffers are not
// averaged, as the reference: H_init/L_init never change, and the puzzle embedding (a buffer
// trained by SignSgd) is evaluated with its current rows there too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>

namespace trm {

class Ema {
 public:
  // Starts the shadow as a copy of `module`'s parameters; `module` must outlive this and be
  // on its training device already (the shadow lives where the parameters were). rate in
  // [0, 1) (mlh::Error(MLH_ERR_INVALID_ARGUMENT) otherwise).
  explicit Ema(torch::nn::Module& module, double rate = 0.999);

  void update();  // shadow = rate * shadow + (1 - rate) * param

  // Exchanges the live parameters and the shadow: call twice to get back. Evaluation with the
  // EMA weights: prefer the Swapped scope below.
  void swap();
  // Writes the shadow into `other`, a module of the same structure (e.g. a copy for eval).
  void copy_to(torch::nn::Module& other) const;

  // The EMA weights are in the live module for its lifetime, the trained ones come back after.
  class Swapped {
   public:
    explicit Swapped(Ema& ema) : ema_(ema) { ema_.swap(); }
    ~Swapped() { ema_.swap(); }
    Swapped(const Swapped&) = delete;
    Swapped& operator=(const Swapped&) = delete;

   private:
    Ema& ema_;
  };

  // A module whose buffers are the shadow tensors (named as the parameters with '.' written
  // "__"), to be saved and loaded with the rest: state.add("ema", ema.state_module()).
  torch::nn::Module& state_module() { return *shadow_module_; }
  const std::vector<at::Tensor>& shadow() const { return shadow_; }
  double rate() const { return rate_; }

 private:
  torch::nn::Module& module_;
  double rate_;
  std::vector<std::string> names_;
  std::vector<at::Tensor> params_, shadow_;
  std::shared_ptr<torch::nn::Module> shadow_module_;
};

}  // namespace trm
