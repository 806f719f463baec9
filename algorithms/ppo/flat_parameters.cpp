#include "flat_parameters.hpp"

#include <ATen/ATen.h>
#include <torch/autograd.h>

namespace ppo {

FlatParameters::FlatParameters(torch::nn::Module& module) : module_(module) {
  at::NoGradGuard no_grad;
  const auto params = module_.parameters();
  int64_t total = 0;
  for (const auto& p : params) total += p.numel();
  flat_ = at::zeros({total}, params.at(0).options().requires_grad(false));
  grad_ = at::zeros_like(flat_);
  rebind();
  flat_.set_requires_grad(true);
  flat_.mutable_grad() = grad_;
}

void FlatParameters::rebind() {
  at::NoGradGuard no_grad;
  const at::Tensor data = flat_.detach();
  int64_t offset = 0;
  for (auto& p : module_.parameters()) {
    const int64_t n = p.numel();
    at::Tensor slot = data.narrow(0, offset, n);
    if (slot.data_ptr() != p.data_ptr()) slot.copy_(p.detach().reshape(-1).to(data.device(), data.scalar_type()));
    p.set_data(slot.view(p.sizes()));
    p.mutable_grad() = grad_.narrow(0, offset, n).view(p.sizes());
    offset += n;
  }
  mark_changed();
}

void FlatParameters::mark_changed() {
  for (auto& p : module_.parameters()) p.unsafeGetTensorImpl()->bump_version();
}

}  // namespace ppo
