// The EMA of the model's weights (see ema.hpp).
#include "model/ema.hpp"

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>

namespace trm {

Ema::Ema(torch::nn::Module& module, double rate)
    : module_(module), rate_(rate), shadow_module_(std::make_shared<torch::nn::Module>("Ema")) {
  if (!(rate >= 0 && rate < 1))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "EMA: rate must be in [0, 1), got " + std::to_string(rate));
  at::NoGradGuard no_grad;
  for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
    if (!item.value().requires_grad()) continue;
    std::string key = item.key();
    for (size_t pos = key.find('.'); pos != std::string::npos; pos = key.find('.', pos + 2)) key.replace(pos, 1, "__");
    names_.push_back(item.key());
    params_.push_back(item.value());
    // Buffers of the holder module: the tensors are the shadow itself, so loading a
    // checkpoint into state_module() updates the EMA in place.
    shadow_.push_back(shadow_module_->register_buffer(key, item.value().detach().clone()));
  }
}

void Ema::update() {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) shadow_[i].mul_(rate_).add_(params_[i].detach(), 1.0 - rate_);
}

void Ema::swap() {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor live = params_[i].detach().clone();
    params_[i].detach().copy_(shadow_[i]);
    shadow_[i].copy_(live);
  }
}

void Ema::copy_to(torch::nn::Module& other) const {
  at::NoGradGuard no_grad;
  auto targets = other.named_parameters(/*recurse=*/true);
  for (size_t i = 0; i < names_.size(); ++i) {
    at::Tensor* target = targets.find(names_[i]);
    if (target == nullptr || !target->sizes().equals(shadow_[i].sizes()))
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "EMA copy_to: the module has no parameter '" + names_[i] +
                                                     "' shaped as the shadow");
    target->detach().copy_(shadow_[i]);
  }
}

}  // namespace trm
