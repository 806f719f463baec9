// Loss scaling for fp16 training, with the semantics of PyTorch's torch.cuda.amp.GradScaler:
// the loss is multiplied by a scale so that small fp16 gradients do not underflow; before the
// optimizer steps the gradients are divided by it again, and a step whose gradients hold inf
// or NaN is skipped and the scale backed off. After `growth_interval` clean steps in a row
// the scale grows. bf16 needs no scaler (its range is fp32's): construct it disabled.
//
//   scaler.scale(loss).backward();
//   scaler.unscale_(optimizer);        // optional, e.g. before clipping gradients
//   scaler.step(optimizer);
//   scaler.update();
#pragma once

#include <cstdint>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace torch::optim {
class Optimizer;
}

namespace mlh::rt {

class GradScaler {
 public:
  explicit GradScaler(double init_scale = 65536.0, double growth_factor = 2.0, double backoff_factor = 0.5,
                      int64_t growth_interval = 2000, bool enabled = true);

  bool enabled() const { return enabled_; }

  // loss * scale (the loss itself when disabled).
  at::Tensor scale(const at::Tensor& loss) const;

  // Divides the gradients of the optimizer's parameters by the scale and records whether any
  // is inf or NaN. At most once per optimizer between update()s; throws mlh::Error when called
  // again or after step(), and for fp16 gradients (their unscaled values would underflow:
  // keep fp32 master parameters).
  void unscale_(torch::optim::Optimizer& optimizer);

  // Unscales (unless unscale_ was called) and runs optimizer.step() unless a gradient was inf
  // or NaN. Returns whether it stepped. Once per optimizer between update()s.
  bool step(torch::optim::Optimizer& optimizer);

  // Adjusts the scale from this iteration's steps: backoff when any optimizer found inf/NaN,
  // growth after growth_interval clean iterations. Throws when no step or unscale_ preceded it.
  void update();

  double get_scale() const;  // 1.0 when disabled
  int64_t growth_tracker() const { return growth_tracker_; }

  // {"scale", "growth_factor", "backoff_factor", "growth_interval", "growth_tracker"}.
  nlohmann::json state() const;
  // Throws mlh::Error naming the field of a malformed state.
  void load_state(const nlohmann::json& state);

 private:
  enum class Stage { kReady, kUnscaled, kStepped };
  struct PerOptimizer {
    Stage stage = Stage::kReady;
    bool found_inf = false;
  };

  // Scale kept in float32 as PyTorch keeps its scale tensor, so growth stops where float32
  // would overflow exactly as there.
  float scale_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  bool enabled_;
  int64_t growth_tracker_ = 0;
  std::unordered_map<const torch::optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace mlh::rt
