// The mlp actor-critic: separate actor and critic MLPs with tanh (CleanRL's ppo.py Agent),
// plus a plain-C++ inference path for rollout collection.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include "networks/fast_tanh.hpp"
#include "networks/internal.hpp"
#include "networks/networks.hpp"

namespace ppo::detail {
namespace {

// y = x W + b over `rows` rows (wt: W^T, [n_in, n_out] row-major), then tanh when `activate`.
// The inner loop runs over outputs (no reduction), so it vectorises; built for AVX2+FMA as
// well as the baseline, picked at load time.
__attribute__((target_clones("arch=haswell", "default"), optimize("no-trapping-math"))) void dense(const float* wt, const float* bias,
                                                                     const float* x, float* y, int64_t rows,
                                                                     int64_t n_in, int64_t n_out, bool activate) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n_in;
    float* __restrict__ yr = y + r * n_out;
    for (int64_t o = 0; o < n_out; ++o) yr[o] = bias[o];
    for (int64_t i = 0; i < n_in; ++i) {
      const float xi = xr[i];
      const float* __restrict__ wi = wt + i * n_out;
      for (int64_t o = 0; o < n_out; ++o) yr[o] += xi * wi[o];
    }
  }
  if (activate) {
    float* __restrict__ v = y;
    for (int64_t k = 0; k < rows * n_out; ++k) v[k] = fast_tanh(v[k]);
  }
}

// A stack of linear layers, tanh between them; registered as "<i>.weight" / "<i>.bias".
class Trunk : public torch::nn::Module {
 public:
  Trunk(int64_t in, const std::vector<int64_t>& hidden, int64_t out, double out_gain) {
    std::vector<int64_t> sizes{in};
    sizes.insert(sizes.end(), hidden.begin(), hidden.end());
    sizes.push_back(out);
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      auto layer = register_module(std::to_string(i), torch::nn::Linear(sizes[i], sizes[i + 1]));
      const bool last = i + 2 == sizes.size();
      orthogonal_init(layer->weight, layer->bias, last ? out_gain : std::sqrt(2.0));
      layers.push_back(layer);
    }
  }

  at::Tensor forward(at::Tensor x) {
    for (size_t i = 0; i < layers.size(); ++i) {
      x = at::linear(x, layers[i]->weight, layers[i]->bias);
      if (i + 1 < layers.size()) x = at::tanh(x);
    }
    return x;
  }

  // rows x [in] -> out [rows x out]; `a`, `b` scratch of rows x widest layer floats.
  void infer(const float* in, int64_t rows, float* out, std::vector<float>& a, std::vector<float>& b) {
    if (transposed_.size() != layers.size()) {
      transposed_.resize(layers.size());
      keys_.assign(layers.size(), {nullptr, 0});
    }
    const float* x = in;
    for (size_t l = 0; l < layers.size(); ++l) {
      const at::Tensor& w = layers[l]->weight;
      const int64_t n_out = w.size(0), n_in = w.size(1);
      // W^T, refreshed when the weight changed (an optimizer step or a load bumps its version
      // or replaces its storage).
      const std::pair<const void*, int64_t> key{w.data_ptr(), w._version()};
      if (keys_[l] != key) {
        transposed_[l].resize(n_in * n_out);
        const float* src = w.data_ptr<float>();
        for (int64_t o = 0; o < n_out; ++o)
          for (int64_t i = 0; i < n_in; ++i) transposed_[l][i * n_out + o] = src[o * n_in + i];
        keys_[l] = key;
      }
      const bool last = l + 1 == layers.size();
      float* y = last ? out : (x == a.data() ? b.data() : a.data());
      dense(transposed_[l].data(), layers[l]->bias.data_ptr<float>(), x, y, rows, n_in, n_out, !last);
      x = y;
    }
  }

  std::vector<torch::nn::Linear> layers;

 private:
  std::vector<std::vector<float>> transposed_;
  std::vector<std::pair<const void*, int64_t>> keys_;
};

class MlpActorCritic : public ActorCritic {
 public:
  explicit MlpActorCritic(const NetworkSpec& spec) : spec_(spec) {
    const int64_t in = spec.observation_shape[0];
    actor_ = register_module("actor", std::make_shared<Trunk>(in, spec.mlp_hidden, spec.num_actions, 0.01));
    critic_ = register_module("critic", std::make_shared<Trunk>(in, spec.mlp_hidden, 1, 1.0));
    width_ = std::max(*std::max_element(spec.mlp_hidden.begin(), spec.mlp_hidden.end()), spec.num_actions);
  }

  PolicyOutput forward_normalized(const at::Tensor& observations) override {
    check_observations(observations, spec_);
    return {actor_->forward(observations), critic_->forward(observations).squeeze(1)};
  }

  const NetworkSpec& spec() const override { return spec_; }

  void infer_normalized(const float* observations, int64_t batch, float* logits, float* values) override {
    // Weights on the CPU in float32 (the layout infer reads); otherwise the generic path.
    const at::Tensor& w0 = actor_->layers[0]->weight;
    if (!w0.device().is_cpu() || w0.scalar_type() != at::kFloat) {
      infer_torch(observations, batch, logits, values);
      return;
    }
    const size_t need = static_cast<size_t>(batch * width_);
    if (a_.size() < need) {
      a_.resize(need);
      b_.resize(need);
    }
    actor_->infer(observations, batch, logits, a_, b_);
    critic_->infer(observations, batch, values, a_, b_);
  }

 private:
  NetworkSpec spec_;
  std::shared_ptr<Trunk> actor_, critic_;
  int64_t width_ = 0;
  std::vector<float> a_, b_;
};

}  // namespace

std::shared_ptr<ActorCritic> make_mlp(const NetworkSpec& spec) { return std::make_shared<MlpActorCritic>(spec); }

}  // namespace ppo::detail
