#include "mlh/runtime/grad_scaler.hpp"

#include <cmath>

#include <torch/optim/optimizer.h>

#include "mlh/plugin.hpp"

namespace mlh::rt {

namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(MLH_ERR_INVALID_ARGUMENT, "GradScaler: " + message); }

void check_settings(double scale, double growth_factor, double backoff_factor, int64_t growth_interval) {
  if (!(scale > 0) || !std::isfinite(scale)) fail("scale must be a positive finite number");
  if (!(growth_factor > 1)) fail("growth_factor must be > 1");
  if (!(backoff_factor > 0 && backoff_factor < 1)) fail("backoff_factor must be in (0, 1)");
  if (growth_interval < 1) fail("growth_interval must be a positive integer");
}

}  // namespace

GradScaler::GradScaler(double init_scale, double growth_factor, double backoff_factor, int64_t growth_interval,
                       bool enabled)
    : scale_(static_cast<float>(init_scale)),
      growth_factor_(growth_factor),
      backoff_factor_(backoff_factor),
      growth_interval_(growth_interval),
      enabled_(enabled) {
  check_settings(init_scale, growth_factor, backoff_factor, growth_interval);
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const {
  if (!enabled_) return loss;
  return loss * static_cast<double>(scale_);
}

void GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!enabled_) return;
  PerOptimizer& state = per_optimizer_[&optimizer];
  if (state.stage == Stage::kUnscaled) fail("unscale_() has already been called on this optimizer since the last update()");
  if (state.stage == Stage::kStepped) fail("unscale_() is being called after step()");

  // As PyTorch: the reciprocal in double, applied in float32; the inf/NaN check is gathered
  // into one tensor so that there is a single device synchronisation per optimizer.
  const double inv_scale = static_cast<double>(1.0f / scale_);
  at::Tensor found;
  for (auto& group : optimizer.param_groups())
    for (auto& param : group.params()) {
      at::Tensor grad = param.grad();
      if (!grad.defined()) continue;
      if (grad.scalar_type() == at::kHalf) fail("attempting to unscale fp16 gradients");
      grad.mul_(inv_scale);
      at::Tensor bad = grad.isfinite().logical_not().any();
      found = found.defined() ? found.logical_or(bad.to(found.device())) : bad;
    }
  state.found_inf = found.defined() && found.item<bool>();
  state.stage = Stage::kUnscaled;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  if (per_optimizer_[&optimizer].stage == Stage::kStepped) fail("step() has already been called since the last update()");
  if (per_optimizer_[&optimizer].stage == Stage::kReady) unscale_(optimizer);
  PerOptimizer& state = per_optimizer_[&optimizer];
  state.stage = Stage::kStepped;
  if (state.found_inf) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!enabled_) return;
  bool found_inf = false;
  bool recorded = false;
  for (const auto& entry : per_optimizer_) {
    if (entry.second.stage == Stage::kReady) continue;
    recorded = true;
    found_inf = found_inf || entry.second.found_inf;
  }
  if (!recorded) fail("no inf checks were recorded prior to update()");

  // PyTorch's _amp_update_scale_: a growth that would overflow float32 is not applied.
  if (found_inf) {
    scale_ = static_cast<float>(scale_ * backoff_factor_);
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == growth_interval_) {
    const float grown = static_cast<float>(scale_ * growth_factor_);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return enabled_ ? static_cast<double>(scale_) : 1.0; }

nlohmann::json GradScaler::state() const {
  return {{"scale", static_cast<double>(scale_)},
          {"growth_factor", growth_factor_},
          {"backoff_factor", backoff_factor_},
          {"growth_interval", growth_interval_},
          {"growth_tracker", growth_tracker_}};
}

void GradScaler::load_state(const nlohmann::json& state) {
  auto field = [&](const char* name) -> const nlohmann::json& {
    if (!state.is_object() || !state.contains(name) || !state.at(name).is_number())
      fail(std::string("state field '") + name + "': expected a number");
    return state.at(name);
  };
  auto integer = [&](const char* name) {
    const nlohmann::json& v = field(name);
    if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(std::string("state field '") + name + "': expected a non-negative integer");
    return v.get<int64_t>();
  };
  const double scale = field("scale").get<double>();
  const double growth_factor = field("growth_factor").get<double>();
  const double backoff_factor = field("backoff_factor").get<double>();
  const int64_t growth_interval = integer("growth_interval");
  const int64_t growth_tracker = integer("growth_tracker");
  check_settings(scale, growth_factor, backoff_factor, growth_interval);
  scale_ = static_cast<float>(scale);
  growth_factor_ = growth_factor;
  backoff_factor_ = backoff_factor;
  growth_interval_ = growth_interval;
  growth_tracker_ = growth_tracker;
  per_optimizer_.clear();
}

}  // namespace mlh::rt
