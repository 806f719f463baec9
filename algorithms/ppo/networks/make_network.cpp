// make_network, spec validation and JSON, and the ActorCritic helpers every kind shares.
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
  if (spec.kind != "mlp" && spec.kind != "recursive" && spec.kind != "resnet")
    invalid("kind", "'" + spec.kind + "'", "unknown network kind (mlp, recursive or resnet)");
  require_positive("num_actions", spec.num_actions);
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
  if (spec.kind == "mlp") return detail::make_mlp(spec);
  if (spec.kind == "recursive") return detail::make_recursive(spec);
  return detail::make_resnet(spec);
}

nlohmann::json to_json(const NetworkSpec& spec) {
  return nlohmann::json{{"kind", spec.kind},
                        {"observation_shape", spec.observation_shape},
                        {"num_actions", spec.num_actions},
                        {"mlp_hidden", spec.mlp_hidden},
                        {"hidden_dim", spec.hidden_dim},
                        {"num_heads", spec.num_heads},
                        {"num_recursive_steps", spec.num_recursive_steps},
                        {"blocks", spec.blocks},
                        {"channels", spec.channels},
                        {"value_hidden", spec.value_hidden},
                        {"gradient_checkpointing", spec.gradient_checkpointing}};
}

NetworkSpec network_spec_from_json(const nlohmann::json& json) {
  if (!json.is_object()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "network spec: expected a JSON object");
  NetworkSpec spec;
  auto get = [&json](const char* key, auto& field) {
    auto it = json.find(key);
    if (it == json.end()) return;
    try {
      it->get_to(field);
    } catch (const nlohmann::json::exception&) {
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                       std::string("network spec: ") + key + " = " + it->dump() + ": wrong type");
    }
  };
  get("kind", spec.kind);
  get("observation_shape", spec.observation_shape);
  get("num_actions", spec.num_actions);
  get("mlp_hidden", spec.mlp_hidden);
  get("hidden_dim", spec.hidden_dim);
  get("num_heads", spec.num_heads);
  get("num_recursive_steps", spec.num_recursive_steps);
  get("blocks", spec.blocks);
  get("channels", spec.channels);
  get("value_hidden", spec.value_hidden);
  get("gradient_checkpointing", spec.gradient_checkpointing);
  return spec;
}

// ---- ActorCritic ------------------------------------------------------------------------

int64_t ActorCritic::observation_size() const {
  int64_t n = 1;
  for (int64_t d : spec().observation_shape) n *= d;
  return n;
}

int64_t ActorCritic::parameter_count() const { return mlh::rt::parameter_count(*this); }

void ActorCritic::infer(const float* observations, int64_t batch, float* logits, float* values) {
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
  PolicyOutput out = forward(obs);
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
