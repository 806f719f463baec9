// AdamATan2 (see adam_atan2.hpp for the update rule and its source).
#include "model/adam_atan2.hpp"

#include <cmath>
#include <string>

#include <ATen/ATen.h>
#include <mlh/runtime/compat.hpp>
#include <torch/serialize/archive.h>

namespace trm {

namespace {

double read_double(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue v;
  archive.read(key, v);
  return v.toDouble();
}

// Marks (and versions) this optimizer's archives: another optimizer's state is refused.
constexpr int64_t kFormat = 1;

}  // namespace

void AdamATan2Options::serialize(torch::serialize::OutputArchive& archive) const {
  archive.write("lr", c10::IValue(lr()));
  archive.write("beta1", c10::IValue(std::get<0>(betas())));
  archive.write("beta2", c10::IValue(std::get<1>(betas())));
  archive.write("weight_decay", c10::IValue(weight_decay()));
  archive.write("a", c10::IValue(a()));
  archive.write("b", c10::IValue(b()));
}

void AdamATan2Options::serialize(torch::serialize::InputArchive& archive) {
  lr(read_double(archive, "lr"));
  betas(std::make_tuple(read_double(archive, "beta1"), read_double(archive, "beta2")));
  weight_decay(read_double(archive, "weight_decay"));
  a(read_double(archive, "a"));
  b(read_double(archive, "b"));
}

void AdamATan2ParamState::serialize(torch::serialize::OutputArchive& archive) const {
  archive.write("step", c10::IValue(step()));
  archive.write("exp_avg", exp_avg(), /*is_buffer=*/true);
  archive.write("exp_avg_sq", exp_avg_sq(), /*is_buffer=*/true);
}

void AdamATan2ParamState::serialize(torch::serialize::InputArchive& archive) {
  c10::IValue s;
  archive.read("step", s);
  step(s.toInt());
  at::Tensor m, v;
  archive.read("exp_avg", m, /*is_buffer=*/true);
  archive.read("exp_avg_sq", v, /*is_buffer=*/true);
  exp_avg(m);
  exp_avg_sq(v);
}

AdamATan2::AdamATan2(std::vector<at::Tensor> params, AdamATan2Options defaults)
    : Optimizer(std::move(params), std::make_unique<AdamATan2Options>(defaults)) {
  const auto [beta1, beta2] = defaults.betas();
  TORCH_CHECK(defaults.lr() >= 0, "AdamATan2: invalid learning rate: ", defaults.lr());
  TORCH_CHECK(beta1 >= 0 && beta1 < 1, "AdamATan2: invalid beta1: ", beta1);
  TORCH_CHECK(beta2 >= 0 && beta2 < 1, "AdamATan2: invalid beta2: ", beta2);
  TORCH_CHECK(defaults.weight_decay() >= 0, "AdamATan2: invalid weight_decay: ", defaults.weight_decay());
  TORCH_CHECK(defaults.a() > 0 && defaults.b() > 0, "AdamATan2: a and b must be > 0");
}

at::Tensor AdamATan2::step(LossClosure closure) {
  at::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const AdamATan2Options&>(group.options());
    const auto [beta1, beta2] = o.betas();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      at::Tensor grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), "AdamATan2 does not support sparse gradients");
      auto& slot = state_[mlh::rt::compat::optimizer_state_key(p)];
      if (!slot) {
        auto fresh = std::make_unique<AdamATan2ParamState>();
        fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& st = static_cast<AdamATan2ParamState&>(*slot);
      st.step(st.step() + 1);  // the reference increments before the update: t = 1 first
      // Scalars in double, as the kernel's FusedAdamMathFunctor; the tensor ops cast them to
      // the math type.
      const double t = static_cast<double>(st.step());
      const double bias_correction1 = 1 - std::pow(beta1, t);
      const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, t));
      const double step_size = o.lr() / bias_correction1;
      const double wd_alpha = 1 - o.lr() * o.weight_decay();

      // half/bf16: float math, stored back in the parameter's dtype (the kernel's opmath).
      const bool reduced = p.scalar_type() == at::kHalf || p.scalar_type() == at::kBFloat16;
      at::Tensor param = reduced ? p.to(at::kFloat) : p;
      at::Tensor m = reduced ? st.exp_avg().to(at::kFloat) : st.exp_avg();
      at::Tensor v = reduced ? st.exp_avg_sq().to(at::kFloat) : st.exp_avg_sq();
      const at::Tensor g = grad.to(param.scalar_type());

      param.mul_(wd_alpha);
      m.lerp_(g, 1 - beta1);
      v.lerp_(g * g, 1 - beta2);
      // b == 1: sqrt(v) / bias_correction2_sqrt, the kernel's denom to the bit.
      const at::Tensor denom = v.sqrt().div_(bias_correction2_sqrt / o.b());
      param.add_(at::atan2(m, denom), -step_size * o.a());
      if (reduced) {
        p.copy_(param);
        st.exp_avg().copy_(m);
        st.exp_avg_sq().copy_(v);
      }
    }
  }
  return loss;
}

void AdamATan2::save(torch::serialize::OutputArchive& archive) const {
  archive.write("adam_atan2_format", c10::IValue(kFormat));
  archive.write("groups", c10::IValue(static_cast<int64_t>(param_groups_.size())));
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const auto& group = param_groups_[g];
    torch::serialize::OutputArchive group_archive(archive.compilation_unit());
    group.options().serialize(group_archive);
    group_archive.write("params", c10::IValue(static_cast<int64_t>(group.params().size())));
    for (size_t i = 0; i < group.params().size(); ++i) {
      auto it = state_.find(mlh::rt::compat::optimizer_state_key(group.params()[i]));
      if (it == state_.end() || !it->second) continue;  // never stepped: no state
      torch::serialize::OutputArchive param_archive(archive.compilation_unit());
      it->second->serialize(param_archive);
      group_archive.write("param_" + std::to_string(i), param_archive);
    }
    archive.write("group_" + std::to_string(g), group_archive);
  }
}

void AdamATan2::load(torch::serialize::InputArchive& archive) {
  c10::IValue format, groups;
  TORCH_CHECK(archive.try_read("adam_atan2_format", format) && format.isInt() && format.toInt() == kFormat,
              "not an AdamATan2 state of format ", kFormat, " (another optimizer's?)");
  archive.read("groups", groups);
  TORCH_CHECK(groups.toInt() == static_cast<int64_t>(param_groups_.size()), "AdamATan2: the state has ",
              groups.toInt(), " parameter groups, the optimizer ", param_groups_.size());
  // Checked and read in full before anything changes.
  std::vector<std::unique_ptr<AdamATan2Options>> options;
  std::vector<std::vector<std::unique_ptr<AdamATan2ParamState>>> states;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const auto& params = param_groups_[g].params();
    torch::serialize::InputArchive group_archive;
    archive.read("group_" + std::to_string(g), group_archive);
    options.push_back(std::make_unique<AdamATan2Options>());
    options.back()->serialize(group_archive);
    c10::IValue count;
    group_archive.read("params", count);
    TORCH_CHECK(count.toInt() == static_cast<int64_t>(params.size()), "AdamATan2: group ", g, " has ",
                count.toInt(), " parameters in the state, ", params.size(), " in the optimizer");
    states.emplace_back();
    for (size_t i = 0; i < params.size(); ++i) {
      torch::serialize::InputArchive param_archive;
      auto& st = states.back().emplace_back();
      if (!group_archive.try_read("param_" + std::to_string(i), param_archive)) continue;
      st = std::make_unique<AdamATan2ParamState>();
      st->serialize(param_archive);
      TORCH_CHECK(st->exp_avg().sizes() == params[i].sizes() && st->exp_avg_sq().sizes() == params[i].sizes(),
                  "AdamATan2: parameter ", i, " of group ", g, " is ", params[i].sizes(), ", its state ",
                  st->exp_avg().sizes());
      st->exp_avg(st->exp_avg().to(params[i].device(), params[i].scalar_type()));
      st->exp_avg_sq(st->exp_avg_sq().to(params[i].device(), params[i].scalar_type()));
    }
  }
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    param_groups_[g].set_options(std::move(options[g]));
    const auto& params = param_groups_[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      const auto key = mlh::rt::compat::optimizer_state_key(params[i]);
      if (states[g][i])
        state_[key] = std::move(states[g][i]);
      else
        state_.erase(key);
    }
  }
}

}  // namespace trm
