// make_network, spec validation and JSON, and the ActorCritic helpers every kind shares.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/device_transfer.hpp>
#include <mlh/runtime/parameters.hpp>
#include <nlohmann/json.hpp>
#include <torch/nn/init.h>

#include "networks/internal.hpp"
#include "running_stats.hpp"
#include "networks/networks.hpp"

namespace ppo {

namespace {

[[noreturn]] void invalid(const std::string& field, const std::string& value, const std::string& why) {
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "network spec: " + field + " = " + value + ": " + why);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void require_positive(const std::string& field, int64_t value) {
  if (value <= 0) invalid(field, std::to_string(value), "must be positive");
}

}  // namespace

void validate_network_spec(const NetworkSpec& spec) {
  if (spec.kind != "mlp" && spec.kind != "recursive" && spec.kind != "resnet" && spec.kind != "python")
    invalid("kind", "'" + spec.kind + "'", "unknown network kind (mlp, recursive, resnet or python)");
  require_positive("num_actions", spec.num_actions);
  if (spec.kind == "python") {  // any observation shape: the module's contract check tries it
    if (spec.module.empty()) invalid("module", "''", "a python network needs its module (path/to/file.py:Class)");
    return;
  }
  const size_t rank = spec.kind == "mlp" ? 1 : 3;
  if (spec.observation_shape.size() != rank)
    invalid("observation_shape", shape_string(spec.observation_shape),
            spec.kind + " takes " + (rank == 1 ? "{features}" : "{planes, height, width}"));
  for (int64_t d : spec.observation_shape)
    if (d <= 0) invalid("observation_shape", shape_string(spec.observation_shape), "sizes must be positive");
  if (spec.kind == "mlp") {
    if (spec.mlp_hidden.empty()) invalid("mlp_hidden", "[]", "needs at least one hidden layer");
    for (int64_t h : spec.mlp_hidden)
      if (h <= 0) invalid("mlp_hidden", shape_string(spec.mlp_hidden), "sizes must be positive");
  } else if (spec.kind == "recursive") {
    require_positive("hidden_dim", spec.hidden_dim);
    require_positive("num_heads", spec.num_heads);
    require_positive("num_recursive_steps", spec.num_recursive_steps);
    if (spec.hidden_dim % spec.num_heads != 0)
      invalid("hidden_dim", std::to_string(spec.hidden_dim),
              "must be divisible by num_heads (" + std::to_string(spec.num_heads) + ")");
  } else {
    require_positive("blocks", spec.blocks);
    require_positive("channels", spec.channels);
    require_positive("value_hidden", spec.value_hidden);
  }
}

std::shared_ptr<ActorCritic> make_network(const NetworkSpec& spec) {
  validate_network_spec(spec);
  std::shared_ptr<ActorCritic> net = spec.kind == "mlp"         ? detail::make_mlp(spec)
                                     : spec.kind == "recursive" ? detail::make_recursive(spec)
                                     : spec.kind == "python"    ? detail::make_python(spec)
                                                                : detail::make_resnet(spec);
  net->add_spec_extras();
  return net;
}

nlohmann::json to_json(const NetworkSpec& spec) {
  return nlohmann::json{{"kind", spec.kind},
                        {"observation_shape", spec.observation_shape},
                        {"num_actions", spec.num_actions},
                        {"continuous_actions", spec.continuous_actions},
                        {"normalize_observations", spec.normalize_observations},
                        {"mlp_hidden", spec.mlp_hidden},
                        {"hidden_dim", spec.hidden_dim},
                        {"num_heads", spec.num_heads},
                        {"num_recursive_steps", spec.num_recursive_steps},
                        {"blocks", spec.blocks},
                        {"channels", spec.channels},
                        {"value_hidden", spec.value_hidden},
                        {"gradient_checkpointing", spec.gradient_checkpointing},
                        {"module", spec.module},
                        {"kwargs", spec.kwargs}};
}

NetworkSpec network_spec_from_json(const nlohmann::json& json) {
  if (!json.is_object()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "network spec: expected a JSON object");
  NetworkSpec spec{};
  auto read = [&json](const char* key, auto& field) {
    const auto it = json.find(key);
    try {
      it->get_to(field);
    } catch (const nlohmann::json::exception&) {
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                       std::string("network spec: ") + key + " = " + it->dump() + ": wrong type");
    }
  };
  auto get = [&](const char* key, auto& field) {
    if (!json.contains(key)) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("network spec: no ") + key);
    read(key, field);
  };
  // Keys later than the first runs: absent, they mean what those runs had.
  auto get_or = [&](const char* key, auto& field, auto older) {
    if (json.contains(key)) read(key, field);
    else field = older;
  };
  get("kind", spec.kind);
  get("observation_shape", spec.observation_shape);
  get("num_actions", spec.num_actions);
  get_or("continuous_actions", spec.continuous_actions, false);
  get_or("normalize_observations", spec.normalize_observations, false);
  get("mlp_hidden", spec.mlp_hidden);
  get("hidden_dim", spec.hidden_dim);
  get("num_heads", spec.num_heads);
  get("num_recursive_steps", spec.num_recursive_steps);
  get("blocks", spec.blocks);
  get("channels", spec.channels);
  get("value_hidden", spec.value_hidden);
  get("gradient_checkpointing", spec.gradient_checkpointing);
  get_or("module", spec.module, std::string());
  get_or("kwargs", spec.kwargs, nlohmann::json::object());
  return spec;
}

// ---- ActorCritic ------------------------------------------------------------------------

int64_t ActorCritic::observation_size() const {
  int64_t n = 1;
  for (int64_t d : spec().observation_shape) n *= d;
  return n;
}

int64_t ActorCritic::parameter_count() const { return mlh::rt::parameter_count(*this); }

namespace {
// Gymnasium's NormalizeObservation (epsilon 1e-8) and CleanRL's clip of the result.
constexpr double kNormEpsilon = 1e-8;
constexpr double kNormClip = 10.0;
}  // namespace

void ActorCritic::add_spec_extras() {
  const NetworkSpec& s = spec();
  if (s.continuous_actions) log_std_ = register_parameter("actor_logstd", at::zeros({s.num_actions}));
  if (s.normalize_observations) {
    const int64_t n = observation_size();
    const auto f64 = at::TensorOptions().dtype(at::kDouble);
    obs_mean_ = register_buffer("obs_mean", at::zeros({n}, f64));
    obs_var_ = register_buffer("obs_var", at::ones({n}, f64));
    obs_count_ = register_buffer("obs_count", at::full({1}, RunningMeanStd{}.count, f64));
  }
}

PolicyOutput ActorCritic::forward(const at::Tensor& observations) {
  return forward_normalized(spec().normalize_observations ? normalize(observations) : observations);
}

at::Tensor ActorCritic::normalize(const at::Tensor& raw) const {
  const at::Tensor flat = raw.reshape({raw.size(0), -1});
  const at::Tensor mean = obs_mean_.to(flat.device(), at::kFloat);
  const at::Tensor scale = (obs_var_ + kNormEpsilon).rsqrt().to(flat.device(), at::kFloat);
  return ((flat - mean) * scale).clamp(-kNormClip, kNormClip).view(raw.sizes());
}

void ActorCritic::read_statistics() {
  const std::vector<std::pair<const void*, int64_t>> keys{{obs_mean_.data_ptr(), obs_mean_._version()},
                                                          {obs_var_.data_ptr(), obs_var_._version()},
                                                          {obs_count_.data_ptr(), obs_count_._version()}};
  if (keys == stats_keys_) return;
  const at::Tensor m = obs_mean_.to(at::kCPU).contiguous(), v = obs_var_.to(at::kCPU).contiguous();
  mean_.assign(m.data_ptr<double>(), m.data_ptr<double>() + m.numel());
  var_.assign(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
  count_ = obs_count_.to(at::kCPU).item<double>();
  stats_keys_ = keys;
}

void ActorCritic::normalize(const float* raw, int64_t batch, float* out, bool update) {
  const int64_t n = observation_size();
  if (!spec().normalize_observations) {
    std::copy_n(raw, batch * n, out);
    return;
  }
  read_statistics();
  if (update && batch > 0) {
    // Each value's running statistics take in the batch's population mean and variance.
    const double b = static_cast<double>(batch);
    for (int64_t j = 0; j < n; ++j) {
      double bm = 0, bv = 0;
      for (int64_t i = 0; i < batch; ++i) bm += raw[i * n + j];
      bm /= b;
      for (int64_t i = 0; i < batch; ++i) bv += (raw[i * n + j] - bm) * (raw[i * n + j] - bm);
      RunningMeanStd stats{mean_[j], var_[j], count_};
      stats.update(bm, bv / b, b);
      mean_[j] = stats.mean;
      var_[j] = stats.var;
    }
    count_ += b;
    at::NoGradGuard no_grad;
    obs_mean_.copy_(at::from_blob(mean_.data(), {n}, at::kDouble));
    obs_var_.copy_(at::from_blob(var_.data(), {n}, at::kDouble));
    obs_count_.fill_(count_);
    stats_keys_ = {{obs_mean_.data_ptr(), obs_mean_._version()},
                   {obs_var_.data_ptr(), obs_var_._version()},
                   {obs_count_.data_ptr(), obs_count_._version()}};
  }
  for (int64_t j = 0; j < n; ++j) {
    const double scale = 1.0 / std::sqrt(var_[j] + kNormEpsilon);
    for (int64_t i = 0; i < batch; ++i)
      out[i * n + j] =
          static_cast<float>(std::clamp((raw[i * n + j] - mean_[j]) * scale, -kNormClip, kNormClip));
  }
}

void ActorCritic::infer(const float* observations, int64_t batch, float* logits, float* values) {
  if (!spec().normalize_observations) return infer_normalized(observations, batch, logits, values);
  normalized_.resize(static_cast<size_t>(batch * observation_size()));
  normalize(observations, batch, normalized_.data(), /*update=*/false);
  infer_normalized(normalized_.data(), batch, logits, values);
}

void ActorCritic::infer_normalized(const float* observations, int64_t batch, float* logits, float* values) {
  infer_torch(observations, batch, logits, values);
}

void ActorCritic::infer_torch(const float* observations, int64_t batch, float* logits, float* values) {
  c10::InferenceMode guard;
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), spec().observation_shape.begin(), spec().observation_shape.end());
  // The observations live in host memory; the network on whatever device it was moved to.
  const at::Device device = parameters().front().device();
  at::Tensor obs = mlh::rt::to_device(at::from_blob(const_cast<float*>(observations), shape, at::kFloat), device,
                                      pinned_transfers_);
  PolicyOutput out = forward_normalized(obs);
  at::Tensor l = out.logits.to(at::kCPU, at::kFloat).contiguous(), v = out.value.to(at::kCPU, at::kFloat).contiguous();
  std::memcpy(logits, l.data_ptr<float>(), sizeof(float) * batch * spec().num_actions);
  std::memcpy(values, v.data_ptr<float>(), sizeof(float) * batch);
}

// ---- shared pieces -----------------------------------------------------------------------

namespace detail {

void orthogonal_init(at::Tensor& weight, at::Tensor& bias, double gain) {
  at::NoGradGuard no_grad;
  torch::nn::init::orthogonal_(weight, gain);
  if (bias.defined()) bias.zero_();
}

void check_observations(const at::Tensor& x, const NetworkSpec& spec) {
  bool ok = x.defined() && x.dim() == static_cast<int64_t>(spec.observation_shape.size()) + 1 &&
            x.scalar_type() == at::kFloat;
  for (size_t i = 0; ok && i < spec.observation_shape.size(); ++i) ok = x.size(i + 1) == spec.observation_shape[i];
  if (!ok)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     "ppo " + spec.kind + " network: observations must be float32 [batch, " +
                         shape_string(spec.observation_shape).substr(1) + ", got " +
                         (x.defined() ? std::string(c10::toString(x.scalar_type())) + " " +
                                            shape_string(x.sizes().vec())
                                      : std::string("an undefined tensor")));
}

at::Tensor batch_norm(torch::nn::BatchNorm2dImpl& bn, const at::Tensor& x, bool training, bool recompute) {
  const double momentum = bn.options.momentum().value_or(0.1);
  if (training && !recompute) {
    at::NoGradGuard no_grad;
    bn.num_batches_tracked.add_(1);
  }
  return at::batch_norm(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, training,
                        recompute ? 0.0 : momentum, bn.options.eps(), /*cudnn_enabled=*/true);
}

}  // namespace detail
}  // namespace ppo
