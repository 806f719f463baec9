#include "mlp_fast.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <ATen/ATen.h>
#include <mlh/runtime/compat.hpp>

#include "networks/fast_tanh.hpp"
#include "ppo_loss.hpp"

namespace ppo {
namespace {

// The hot loops, compiled for AVX-512 and AVX2+FMA as well as the baseline, picked at load
// time (GCC function multi-versioning), so the library stays portable.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define PPO_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PPO_CLONES
#endif

// y[r, :] (+)= sum_k a(r, k) M[k, :] for r < rows, with a(r, k) = a[r * sr + k * sk] and M
// [K, N] row-major; y starts from `bias` (broadcast over rows), or its own values when
// accumulate, or 0. Blocks of 4 rows x 16 columns stay in registers across the k loop.
// Forward (x w^T), the input gradient (g w) and the weight gradient (g^T x) are all this.
PPO_CLONES void matmul_rows(const float* a, int64_t sr, int64_t sk, const float* M, int64_t rows, int64_t K, int64_t N,
                            const float* bias, bool accumulate, float* y) {
  constexpr int W = 16;
  int64_t n0 = 0;
  for (; n0 + W <= N; n0 += W) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
      float acc[4][W];
      for (int q = 0; q < 4; ++q)
        for (int j = 0; j < W; ++j)
          acc[q][j] = accumulate ? y[(r + q) * N + n0 + j] : (bias ? bias[n0 + j] : 0.0f);
      const float* a0 = a + r * sr;
      for (int64_t k = 0; k < K; ++k) {
        const float* m = M + k * N + n0;
        const float x0 = a0[k * sk], x1 = a0[sr + k * sk], x2 = a0[2 * sr + k * sk], x3 = a0[3 * sr + k * sk];
        for (int j = 0; j < W; ++j) {
          acc[0][j] += x0 * m[j];
          acc[1][j] += x1 * m[j];
          acc[2][j] += x2 * m[j];
          acc[3][j] += x3 * m[j];
        }
      }
      for (int q = 0; q < 4; ++q)
        for (int j = 0; j < W; ++j) y[(r + q) * N + n0 + j] = acc[q][j];
    }
    for (; r < rows; ++r) {
      float acc[W];
      for (int j = 0; j < W; ++j) acc[j] = accumulate ? y[r * N + n0 + j] : (bias ? bias[n0 + j] : 0.0f);
      for (int64_t k = 0; k < K; ++k) {
        const float x0 = a[r * sr + k * sk];
        const float* m = M + k * N + n0;
        for (int j = 0; j < W; ++j) acc[j] += x0 * m[j];
      }
      for (int j = 0; j < W; ++j) y[r * N + n0 + j] = acc[j];
    }
  }
  for (; n0 < N; ++n0)  // leftover columns (e.g. the 2 logits, the value)
    for (int64_t r = 0; r < rows; ++r) {
      float acc = accumulate ? y[r * N + n0] : (bias ? bias[n0] : 0.0f);
      for (int64_t k = 0; k < K; ++k) acc += a[r * sr + k * sk] * M[k * N + n0];
      y[r * N + n0] = acc;
    }
}

PPO_CLONES void tanh_inplace(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fast_tanh(y[i]);
}

PPO_CLONES void tanh_grad_inplace(float* d, const float* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] *= 1.0f - h[i] * h[i];
}

// Gradient-norm clipping and Adam over n parameters; returns the sum of squared gradients.
PPO_CLONES double grad_sq_sum(const float* g, int64_t n) {
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += static_cast<double>(g[i]) * g[i];
  return sq;
}

PPO_CLONES void adam_update(float* p, float* g, float* m, float* v, int64_t n, float coef, float b1, float b2,
                            float step_size, float inv_sqrt_bc2, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * coef;
    g[i] = gi;
    m[i] = m[i] * b1 + (1 - b1) * gi;
    v[i] = v[i] * b2 + (1 - b2) * gi * gi;
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
  }
}

}  // namespace

std::unique_ptr<FastMlpStep> FastMlpStep::create(ActorCritic& net, FlatParameters& flat) {
  const NetworkSpec& spec = net.spec();
  if (spec.kind != "mlp" || spec.observation_shape.size() != 1) return nullptr;
  // Its loss is the categorical one: a Gaussian policy takes the autograd update.
  if (spec.continuous_actions) return nullptr;
  if (!flat.flat().device().is_cpu() || flat.flat().scalar_type() != at::kFloat) return nullptr;
  std::unique_ptr<FastMlpStep> f(new FastMlpStep(flat));
  auto params = net.named_parameters();
  const size_t depth = spec.mlp_hidden.size() + 1;
  for (const char* trunk : {"actor", "critic"}) {
    std::vector<Layer>& layers = std::string(trunk) == "actor" ? f->actor_ : f->critic_;
    for (size_t l = 0; l < depth; ++l) {
      const std::string prefix = std::string(trunk) + "." + std::to_string(l) + ".";
      const at::Tensor* w = params.find(prefix + "weight");
      const at::Tensor* b = params.find(prefix + "bias");
      if (!w || !b || w->dim() != 2 || !w->is_contiguous()) return nullptr;
      Layer L;
      L.w = w->data_ptr<float>();
      L.b = b->data_ptr<float>();
      L.gw = w->grad().defined() ? w->grad().data_ptr<float>() : nullptr;
      L.gb = b->grad().defined() ? b->grad().data_ptr<float>() : nullptr;
      if (!L.gw || !L.gb) return nullptr;
      L.out = w->size(0);
      L.in = w->size(1);
      L.wt.resize(static_cast<size_t>(L.in * L.out));
      layers.push_back(std::move(L));
    }
  }
  if (static_cast<int64_t>(params.size()) != static_cast<int64_t>(4 * depth)) return nullptr;
  f->obs_size_ = spec.observation_shape[0];
  f->num_actions_ = spec.num_actions;
  if (f->actor_.back().out != f->num_actions_ || f->critic_.back().out != 1) return nullptr;
  return f;
}

void FastMlpStep::forward(std::vector<Layer>& trunk, const float* x, int64_t B, std::vector<std::vector<float>>& acts) {
  acts.resize(trunk.size());
  const float* input = x;
  for (size_t l = 0; l < trunk.size(); ++l) {
    Layer& L = trunk[l];
    const int64_t in = L.in, out = L.out;
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) L.wt[i * out + o] = L.w[o * in + i];
    std::vector<float>& y = acts[l];
    y.resize(static_cast<size_t>(B * out));
    matmul_rows(input, in, 1, L.wt.data(), B, in, out, L.b, false, y.data());
    if (l + 1 != trunk.size()) tanh_inplace(y.data(), B * out);
    input = y.data();
  }
}

void FastMlpStep::backward(std::vector<Layer>& trunk, const float* x, int64_t B, std::vector<std::vector<float>>& acts,
                           std::vector<float>& grad_out) {
  std::vector<float>* g = &grad_out;
  for (size_t l = trunk.size(); l-- > 0;) {
    Layer& L = trunk[l];
    const int64_t in = L.in, out = L.out;
    const float* input = l == 0 ? x : acts[l - 1].data();
    matmul_rows(g->data(), 1, out, input, out, B, in, nullptr, true, L.gw);  // gw += g^T x
    for (int64_t b = 0; b < B; ++b)
      for (int64_t o = 0; o < out; ++o) L.gb[o] += (*g)[b * out + o];
    if (l == 0) break;
    std::vector<float>& dh = g == &scratch_a_ ? scratch_b_ : scratch_a_;
    dh.resize(static_cast<size_t>(B * in));
    matmul_rows(g->data(), out, 1, L.w, B, out, in, nullptr, false, dh.data());  // dh = g w
    tanh_grad_inplace(dh.data(), acts[l - 1].data(), B * in);
    g = &dh;
  }
}

FastLoss FastMlpStep::loss_and_grad(const float* obs, const int64_t* actions, const float* old_logprobs,
                                    const float* advantages, const float* returns, const float* old_values, int64_t B,
                                    const LossOptions& o) {
  FastLoss r;
  forward(actor_, obs, B, actor_acts_);
  forward(critic_, obs, B, critic_acts_);
  const std::vector<float>& logits = actor_acts_.back();
  const std::vector<float>& values = critic_acts_.back();
  const int64_t A = num_actions_;
  // Advantage normalisation over the minibatch (unbiased std, as torch.std).
  double mean = 0, var = 0;
  for (int64_t b = 0; b < B; ++b) mean += advantages[b];
  mean /= static_cast<double>(B);
  for (int64_t b = 0; b < B; ++b) var += (advantages[b] - mean) * (advantages[b] - mean);
  const double stdev = B > 1 ? std::sqrt(var / static_cast<double>(B - 1)) : 0.0;
  const bool norm = o.norm_adv && B > 1;
  dlogits_.assign(static_cast<size_t>(B * A), 0.0f);
  dvalue_.assign(static_cast<size_t>(B), 0.0f);
  const double inv_b = 1.0 / static_cast<double>(B);
  double p[64], logp[64];
  for (int64_t b = 0; b < B; ++b) {
    const float* z = logits.data() + b * A;
    double mx = z[0];
    for (int64_t a = 1; a < A; ++a) mx = std::max(mx, static_cast<double>(z[a]));
    double sum = 0;
    for (int64_t a = 0; a < A; ++a) sum += std::exp(z[a] - mx);
    const double lse = mx + std::log(sum);
    double H = 0;
    for (int64_t a = 0; a < A; ++a) {
      logp[a] = z[a] - lse;
      p[a] = std::exp(logp[a]);
      H -= p[a] * logp[a];
    }
    const int64_t act = actions[b];
    const double logratio = logp[act] - old_logprobs[b];
    // The loss terms and their derivatives from their declaration (ppo_loss.hpp): the ratio's
    // derivative with respect to logp[act] is the ratio itself, the value's own is 1.
    const double r_value = std::exp(logratio);
    const Dual ratio{r_value, r_value};
    r.old_approx_kl += -logratio;
    r.approx_kl += approx_kl(r_value, logratio);
    r.clipfrac += clipped(r_value, o.clip_coef);
    const double adv = norm ? (advantages[b] - mean) / (stdev + 1e-8) : advantages[b];
    const Dual pg = policy_loss(ratio, adv, o.clip_coef);
    r.pg_loss += pg.v;
    r.entropy += H;
    // Through log_softmax to the logits: d logp[act] / d z[a] = [a == act] - p[a]; the
    // entropy bonus's gradient is -ent_coef dH/dz[a] = ent_coef p[a] (logp[a] + H).
    const double g_logp = pg.d * inv_b;
    float* dz = dlogits_.data() + b * A;
    for (int64_t a = 0; a < A; ++a) {
      const double d = g_logp * ((a == act ? 1.0 : 0.0) - p[a]) + o.ent_coef * inv_b * p[a] * (logp[a] + H);
      dz[a] = static_cast<float>(d);
    }
    const Dual v = value_loss(Dual{values[b], 1.0}, static_cast<double>(old_values[b]),
                              static_cast<double>(returns[b]), o.clip_coef, o.clip_vloss);
    r.v_loss += v.v;
    dvalue_[b] = static_cast<float>(o.vf_coef * inv_b * v.d);
  }
  r.pg_loss *= inv_b;
  r.v_loss *= inv_b;
  r.entropy *= inv_b;
  r.approx_kl *= inv_b;
  r.old_approx_kl *= inv_b;
  r.clipfrac *= inv_b;
  r.loss = r.pg_loss - o.ent_coef * r.entropy + o.vf_coef * r.v_loss;
  float* g = flat_.grad().data_ptr<float>();
  std::fill(g, g + flat_.numel(), 0.0f);
  backward(actor_, obs, B, actor_acts_, dlogits_);
  backward(critic_, obs, B, critic_acts_, dvalue_);
  return r;
}

double FastMlpStep::clip_and_adam(double max_norm, torch::optim::Adam& optimizer) {
  float* g = flat_.grad().data_ptr<float>();
  float* p = flat_.flat().data_ptr<float>();
  const int64_t n = flat_.numel();
  const double norm = std::sqrt(grad_sq_sum(g, n));
  const float coef = static_cast<float>(std::min(max_norm / (norm + 1e-6), 1.0));

  auto& group = optimizer.param_groups()[0];
  auto& opts = static_cast<torch::optim::AdamOptions&>(group.options());
  const auto key = mlh::rt::compat::optimizer_state_key(flat_.flat());
  auto& states = optimizer.state();
  auto it = states.find(key);
  if (it == states.end()) {
    auto s = std::make_unique<torch::optim::AdamParamState>();
    s->step(0);
    s->exp_avg(at::zeros_like(flat_.flat().detach()));
    s->exp_avg_sq(at::zeros_like(flat_.flat().detach()));
    it = states.emplace(key, std::move(s)).first;
  }
  auto& state = static_cast<torch::optim::AdamParamState&>(*it->second);
  state.step(state.step() + 1);
  const double beta1 = std::get<0>(opts.betas()), beta2 = std::get<1>(opts.betas());
  const double bc1 = 1 - std::pow(beta1, static_cast<double>(state.step()));
  const double bc2 = 1 - std::pow(beta2, static_cast<double>(state.step()));
  const float step_size = static_cast<float>(opts.lr() / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float eps = static_cast<float>(opts.eps());
  const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
  float* m = state.exp_avg().data_ptr<float>();
  float* v = state.exp_avg_sq().data_ptr<float>();
  adam_update(p, g, m, v, n, coef, b1, b2, step_size, inv_sqrt_bc2, eps);
  return norm;
}

}  // namespace ppo
