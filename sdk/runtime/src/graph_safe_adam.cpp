#include "mlh/runtime/graph_safe_adam.hpp"

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>

#include <ATen/ATen.h>
#include <torch/utils.h>
#include <mlh/plugin.hpp>

namespace mlh::rt {

namespace {

// LibTorch keys an optimizer's state by the parameter's TensorImpl: as its address printed
// (1.13) or as the pointer itself (2.x).
template <class State>
auto state_key(const at::Tensor& p) {
  using Key = typename State::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream address;  // what 1.13's c10::guts::to_string writes
    address << p.unsafeGetTensorImpl();
    return address.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

}  // namespace

GraphSafeAdam::GraphSafeAdam(torch::optim::Adam& adam) : adam_(adam) {
  auto& states = adam_.state();
  using States = std::remove_reference_t<decltype(states)>;
  int64_t steps = 0;
  for (auto& group : adam_.param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    if (options.amsgrad())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "GraphSafeAdam: AMSGrad is not supported (its maximum is kept eagerly)");
    const at::Tensor lr = group.params().empty()
                              ? at::Tensor()
                              : at::full({}, options.lr(), group.params().front().options().dtype(at::kDouble));
    if (lr.defined()) group_lrs_.push_back({lr, &options});
    for (const at::Tensor& p : group.params()) {
      const auto key = state_key<States>(p);
      auto it = states.find(key);
      if (it == states.end()) {
        auto state = std::make_unique<torch::optim::AdamParamState>();
        state->step(0);
        state->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        state->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        it = states.emplace(key, std::move(state)).first;
      }
      auto* state = static_cast<torch::optim::AdamParamState*>(it->second.get());
      steps = state->step();
      slots_.push_back({p, state, &options, lr});
    }
  }
  if (!slots_.empty())
    step_ = at::full({}, static_cast<double>(steps), slots_.front().param.options().dtype(at::kDouble));
}

void GraphSafeAdam::load_lr() {
  for (auto& [lr, options] : group_lrs_) lr.fill_(options->lr());
}

void GraphSafeAdam::step() {
  if (slots_.empty()) return;
  at::NoGradGuard no_grad;
  step_.add_(1);
  for (const Slot& s : slots_) {
    at::Tensor grad = s.param.grad();
    if (!grad.defined()) continue;
    const double beta1 = std::get<0>(s.options->betas()), beta2 = std::get<1>(s.options->betas());
    if (s.options->weight_decay() != 0) grad = grad.add(s.param, s.options->weight_decay());
    at::Tensor exp_avg = s.state->exp_avg(), exp_avg_sq = s.state->exp_avg_sq();
    exp_avg.mul_(beta1).add_(grad, 1 - beta1);
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    // The corrections in double, as Adam computes them on the host, then used in the
    // parameters' float as its scalars are: the same rounding, step for step.
    const at::Tensor bias_correction1 = 1 - at::pow(beta1, step_);
    const at::Tensor bias_correction2 = 1 - at::pow(beta2, step_);
    const at::Tensor denom = (exp_avg_sq.sqrt() / bias_correction2.sqrt()).add_(s.options->eps());
    // Adam's p.addcdiv_(exp_avg, denom, -step_size) with step_size = lr / bias_correction1,
    // which a graph cannot take as a scalar: folded into the numerator (value * exp_avg is
    // what addcdiv_ multiplies first).
    s.param.addcdiv_(exp_avg * (-s.lr / bias_correction1).to(exp_avg.scalar_type()), denom);
  }
}

void GraphSafeAdam::count_host_step() {
  for (const Slot& s : slots_) s.state->step(s.state->step() + 1);
}

}  // namespace mlh::rt
