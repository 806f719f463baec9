#include "ppo_update.hpp"

#include <mlh/runtime/distributed.hpp>

#include "mlp_fast.hpp"
#include "ppo_loss.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <ATen/ATen.h>
#include <torch/autograd.h>

namespace ppo {
namespace {

// CleanRL's epoch loop, which both update paths share: each epoch permutes the batch
// (Fisher-Yates from `rng`, so both paths train on the same minibatches), calls
// `epoch_start()`, then `minibatch(m)` for each minibatch (it returns its approx_kl), and
// stops early once the epoch's last approx_kl, averaged over the ranks, passes target_kl.
template <class EpochStart, class Minibatch>
void run_epochs(const UpdateOptions& options, mlh::rt::Distributed* dist, std::vector<int64_t>& perm,
                std::mt19937_64& rng, UpdateStats& s, EpochStart epoch_start, Minibatch minibatch) {
  for (int64_t epoch = 0; epoch < options.update_epochs; ++epoch) {
    std::iota(perm.begin(), perm.end(), int64_t{0});
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng() % i]);
    epoch_start();
    double epoch_kl = 0;
    for (int64_t m = 0; m < options.num_minibatches; ++m, ++s.minibatches) epoch_kl = minibatch(m);
    if (options.target_kl && dist) epoch_kl = dist->mean(epoch_kl);
    if (options.target_kl && epoch_kl > *options.target_kl) {
      s.early_stop = true;
      break;
    }
  }
}

// The update's statistics, averaged over its minibatches (both update paths).
struct MinibatchMeans {
  double approx_kl = 0, old_approx_kl = 0, pg_loss = 0, v_loss = 0, entropy = 0, clipfrac = 0, grad_norm = 0;
  int64_t n = 0;

  void add(double kl, double old_kl, double pg, double v, double ent, double clip, double gn) {
    approx_kl += kl, old_approx_kl += old_kl, pg_loss += pg, v_loss += v, entropy += ent, clipfrac += clip;
    grad_norm += gn;
    ++n;
  }
  void write(UpdateStats& s) const {
    const double k = static_cast<double>(std::max<int64_t>(n, 1));
    s.approx_kl = approx_kl / k;
    s.old_approx_kl = old_approx_kl / k;
    s.pg_loss = pg_loss / k;
    s.v_loss = v_loss / k;
    s.entropy = entropy / k;
    s.clipfrac = clipfrac / k;
    s.grad_norm = grad_norm / k;
  }
};

}  // namespace

at::Tensor mask_logits(const at::Tensor& logits, const at::Tensor& masks) {
  if (!masks.defined()) return logits;
  return logits.masked_fill(masks.logical_not(), -1e8);
}

LossTerms ppo_loss(const at::Tensor& logits, const at::Tensor& new_values, const at::Tensor& actions,
                   const at::Tensor& old_logprobs, const at::Tensor& advantages, const at::Tensor& returns,
                   const at::Tensor& old_values, const LossOptions& o) {
  const at::Tensor logp_all = at::log_softmax(logits.to(at::kFloat), 1);
  const at::Tensor new_logprob = logp_all.gather(1, actions.view({-1, 1})).view(-1);
  const at::Tensor entropy = -(logp_all.exp() * logp_all).sum(1);
  return ppo_loss_of(new_logprob, entropy, new_values, old_logprobs, advantages, returns, old_values, o);
}

at::Tensor gaussian_log_prob(const at::Tensor& mean, const at::Tensor& log_std, const at::Tensor& actions) {
  const at::Tensor z = (actions - mean) * (-log_std).exp();
  return (-0.5 * z * z - log_std - 0.5 * std::log(2 * M_PI)).sum(1);
}

at::Tensor gaussian_entropy(const at::Tensor& log_std, int64_t batch) {
  return (log_std + 0.5 + 0.5 * std::log(2 * M_PI)).sum().expand({batch});
}

LossTerms ppo_loss_of(const at::Tensor& new_logprob, const at::Tensor& entropy, const at::Tensor& new_values,
                      const at::Tensor& old_logprobs, const at::Tensor& advantages, const at::Tensor& returns,
                      const at::Tensor& old_values, const LossOptions& o) {
  LossTerms t;
  const at::Tensor logratio = new_logprob - old_logprobs;
  const at::Tensor ratio = logratio.exp();
  {
    at::NoGradGuard no_grad;
    t.old_approx_kl = (-logratio).mean();
    t.approx_kl = approx_kl(ratio, logratio).mean();
    t.clipfrac = clipped(ratio, o.clip_coef).mean();
  }
  at::Tensor adv = advantages;
  if (o.norm_adv && adv.numel() > 1) adv = (adv - adv.mean()) / (adv.std() + 1e-8);
  const at::Tensor pg_loss = policy_loss(ratio, adv, o.clip_coef).mean();
  const at::Tensor v_loss =
      value_loss(new_values.to(at::kFloat).view(-1), old_values, returns, o.clip_coef, o.clip_vloss).mean();
  const at::Tensor entropy_loss = entropy.mean();
  t.loss = pg_loss - o.ent_coef * entropy_loss + o.vf_coef * v_loss;
  t.pg_loss = pg_loss.detach();
  t.v_loss = v_loss.detach();
  t.entropy = entropy_loss.detach();
  return t;
}

double annealed_lr(double lr, int64_t iteration, int64_t num_iterations) {
  const double frac = 1.0 - static_cast<double>(iteration - 1) / static_cast<double>(num_iterations);
  return frac * lr;
}

double explained_variance(const float* pred, const float* y, int64_t n) {
  if (n <= 0) return std::nan("");
  double my = 0, md = 0;
  for (int64_t i = 0; i < n; ++i) {
    my += y[i];
    md += y[i] - pred[i];
  }
  my /= static_cast<double>(n);
  md /= static_cast<double>(n);
  double vy = 0, vd = 0;
  for (int64_t i = 0; i < n; ++i) {
    vy += (y[i] - my) * (y[i] - my);
    const double d = y[i] - pred[i] - md;
    vd += d * d;
  }
  return vy == 0 ? std::nan("") : 1.0 - vd / vy;
}

PpoUpdater::~PpoUpdater() = default;

PpoUpdater::PpoUpdater(std::shared_ptr<ActorCritic> net, double lr, const UpdateOptions& options, at::Device device,
                       bool use_fast)
    : net_(std::move(net)),
      options_(options),
      device_(device),
      scaler_(65536.0, 2.0, 0.5, 2000, options.autocast && options.precision == mlh::rt::Precision::kFp16) {
  flat_ = std::make_unique<FlatParameters>(*net_);
  optimizer_ = std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{flat_->flat()},
                                                    torch::optim::AdamOptions(lr).eps(1e-5));
  if (use_fast && !options.autocast && device.is_cpu()) fast_ = FastMlpStep::create(*net_, *flat_);
}

UpdateStats PpoUpdater::update_fast(const Batch& b, std::mt19937_64& rng) {
  UpdateStats s;
  const int64_t n = b.obs.size(0);
  const int64_t mb = n / options_.num_minibatches;
  const at::Tensor obs = b.obs.contiguous(), actions = b.actions.contiguous(), logprobs = b.logprobs.contiguous(),
                   adv = b.advantages.contiguous(), returns = b.returns.contiguous(), values = b.values.contiguous();
  const int64_t O = obs.numel() / n;
  const float* po = obs.data_ptr<float>();
  const int64_t* pa = actions.data_ptr<int64_t>();
  const float *pl = logprobs.data_ptr<float>(), *pv = adv.data_ptr<float>(), *pr = returns.data_ptr<float>(),
              *pval = values.data_ptr<float>();
  mb_obs_.resize(static_cast<size_t>(mb * O));
  mb_actions_.resize(mb);
  mb_logprobs_.resize(mb);
  mb_adv_.resize(mb);
  mb_returns_.resize(mb);
  mb_values_.resize(mb);
  perm_.resize(static_cast<size_t>(n));
  MinibatchMeans means;
  run_epochs(options_, dist_, perm_, rng, s, [] {}, [&](int64_t m) {
    for (int64_t j = 0; j < mb; ++j) {
      const int64_t k = perm_[m * mb + j];
      std::copy_n(po + k * O, O, mb_obs_.data() + j * O);
      mb_actions_[j] = pa[k];
      mb_logprobs_[j] = pl[k];
      mb_adv_[j] = pv[k];
      mb_returns_[j] = pr[k];
      mb_values_[j] = pval[k];
    }
    const FastLoss t = fast_->loss_and_grad(mb_obs_.data(), mb_actions_.data(), mb_logprobs_.data(), mb_adv_.data(),
                                            mb_returns_.data(), mb_values_.data(), mb, options_.loss);
    if (dist_) dist_->all_reduce_mean(flat_->grad());
    const double grad_norm = fast_->clip_and_adam(options_.max_grad_norm, *optimizer_);
    means.add(t.approx_kl, t.old_approx_kl, t.pg_loss, t.v_loss, t.entropy, t.clipfrac, grad_norm);
    return t.approx_kl;
  });
  flat_->mark_changed();
  means.write(s);
  return s;
}

void PpoUpdater::set_lr(double lr) {
  for (auto& group : optimizer_->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

double PpoUpdater::lr() {
  return static_cast<torch::optim::AdamOptions&>(optimizer_->param_groups()[0].options()).lr();
}

at::Tensor PpoUpdater::minibatch_step(const Batch& mb, bool in_graph) {
  PolicyOutput out;
  {
    std::optional<mlh::rt::AutocastScope> autocast;
    if (options_.autocast) autocast.emplace(options_.precision, device_);
    out = net_->forward_normalized(mb.obs);
  }
  at::Tensor logits = out.logits.to(at::kFloat);
  LossTerms t;
  if (net_->spec().continuous_actions) {
    const at::Tensor log_std = net_->log_std().to(at::kFloat);
    t = ppo_loss_of(gaussian_log_prob(logits, log_std, mb.actions), gaussian_entropy(log_std, logits.size(0)),
                    out.value, mb.logprobs, mb.advantages, mb.returns, mb.values, options_.loss);
  } else {
    if (mb.masks.defined()) logits = mask_logits(logits, mb.masks);
    t = ppo_loss(logits, out.value, mb.actions, mb.logprobs, mb.advantages, mb.returns, mb.values, options_.loss);
  }
  flat_->grad().zero_();
  scaler_.scale(t.loss).backward();
  if (dist_) dist_->all_reduce_mean(flat_->grad());
  if (scaler_.enabled()) scaler_.unscale_(*optimizer_);
  at::Tensor norm;
  {
    at::NoGradGuard no_grad;
    norm = flat_->grad().norm();
    flat_->grad().mul_((options_.max_grad_norm / (norm + 1e-6)).clamp_max(1.0));
  }
  if (in_graph) {
    graph_adam_->step();
  } else {
    scaler_.step(*optimizer_);
    scaler_.update();
  }
  return at::stack({t.approx_kl, t.old_approx_kl, t.pg_loss, t.v_loss, t.entropy, t.clipfrac, norm}).to(at::kFloat);
}

void PpoUpdater::use_graph(mlh::rt::StepGraph graph) {
  graph_ = std::move(graph);
  graph_adam_.reset();
  if (!graph_.on()) return;
  if (fast_) graph_.turn_off("the MLP's plain-C++ update runs on the CPU");
  if (scaler_.enabled()) graph_.turn_off("fp16's loss scaling checks the gradients for overflow on the host");
}

// The graph reads the minibatch from static tensors, copied in before each replay, and
// leaves its statistics in the capture's tensor; Adam's count and learning rate (annealed
// every iteration) live on the device, so one capture serves the whole run.
at::Tensor PpoUpdater::graphed_minibatch(const Batch& mb) {
  if (dist_ && dist_->world_size() > 1) graph_.turn_off("the ranks average their gradients between backward and the step");
  if (!graph_.on()) return minibatch_step(mb, false);
  const auto fields = [](Batch& b) {
    return std::vector<at::Tensor*>{&b.obs, &b.actions, &b.logprobs, &b.advantages, &b.returns, &b.values, &b.masks};
  };
  Batch source = mb;
  const std::vector<at::Tensor*> from = fields(source), to = fields(graph_batch_);
  for (size_t i = 0; i < from.size(); ++i) {
    if (!from[i]->defined()) {
      *to[i] = at::Tensor();
      continue;
    }
    if (!to[i]->defined() || to[i]->sizes() != from[i]->sizes()) *to[i] = at::empty_like(*from[i]);
    to[i]->copy_(*from[i]);
  }
  if (!graph_adam_) graph_adam_.emplace(*optimizer_);
  graph_adam_->load_lr();
  bool eager = false;
  at::Tensor stats;
  graph_.step(
      "minibatch of " + std::to_string(mb.obs.size(0)) + (mb.masks.defined() ? ", masked" : ""),
      [&] { graph_stats_ = minibatch_step(graph_batch_, true); },
      [&] {
        eager = true;
        stats = minibatch_step(mb, false);
      });
  if (eager) return stats;
  graph_adam_->count_host_step();
  return graph_stats_.clone();  // the next replay overwrites the graph's own
}

UpdateStats PpoUpdater::update(const Batch& b, std::mt19937_64& rng) {
  if (fast_ && !b.masks.defined()) return update_fast(b, rng);
  UpdateStats s;
  const int64_t n = b.obs.size(0);
  const int64_t mb = n / options_.num_minibatches;
  perm_.resize(static_cast<size_t>(n));
  Batch epoch;  // the batch in this epoch's order
  auto shuffle = [&] {
    const at::Tensor idx = at::from_blob(perm_.data(), {n}, at::kLong).to(device_);
    epoch.obs = b.obs.index_select(0, idx);
    epoch.actions = b.actions.index_select(0, idx);
    epoch.logprobs = b.logprobs.index_select(0, idx);
    epoch.advantages = b.advantages.index_select(0, idx);
    epoch.returns = b.returns.index_select(0, idx);
    epoch.values = b.values.index_select(0, idx);
    epoch.masks = b.masks.defined() ? b.masks.index_select(0, idx) : at::Tensor();
  };
  // The minibatches' statistics add up on the device: the host reads them once, after the
  // epochs, and reads a minibatch's KL only where target_kl needs it.
  at::Tensor sums;
  run_epochs(options_, dist_, perm_, rng, s, shuffle, [&](int64_t m) {
    const int64_t start = m * mb;
    Batch slice;
    slice.obs = epoch.obs.narrow(0, start, mb);
    slice.actions = epoch.actions.narrow(0, start, mb);
    slice.logprobs = epoch.logprobs.narrow(0, start, mb);
    slice.advantages = epoch.advantages.narrow(0, start, mb);
    slice.returns = epoch.returns.narrow(0, start, mb);
    slice.values = epoch.values.narrow(0, start, mb);
    if (epoch.masks.defined()) slice.masks = epoch.masks.narrow(0, start, mb);
    const at::Tensor stats = graphed_minibatch(slice);
    sums = sums.defined() ? sums + stats : stats;
    return options_.target_kl ? stats[0].item<double>() : 0.0;
  });
  flat_->mark_changed();
  if (sums.defined()) {
    const at::Tensor means = (sums / static_cast<double>(s.minibatches)).to(at::kCPU, at::kDouble);
    const double* v = means.data_ptr<double>();
    s.approx_kl = v[0], s.old_approx_kl = v[1], s.pg_loss = v[2], s.v_loss = v[3], s.entropy = v[4];
    s.clipfrac = v[5], s.grad_norm = v[6];
  }
  return s;
}

}  // namespace ppo
