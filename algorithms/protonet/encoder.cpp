#include "encoder.hpp"

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/parameters.hpp>

#include "config.hpp"
#include "model.hpp"
#include "python_encoder.hpp"
#include "resnet12.hpp"

namespace protonet {

int64_t EncoderImpl::parameter_count() const { return mlh::rt::parameter_count(*this); }

Encoder make_encoder(const Config& cfg, int64_t in_channels) {
  if (cfg.encoder == "conv4") return std::make_shared<Conv4Impl>(in_channels, cfg.width);
  if (cfg.encoder == "resnet12") return std::make_shared<ResNet12Impl>(in_channels, cfg.width, cfg.drop_rate);
  if (cfg.encoder == "python") return std::make_shared<PythonEncoderImpl>(cfg, in_channels);
  // parse_config refuses other names already; a Config built by hand could still hold one.
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                   "config field 'model.encoder': '" + cfg.encoder + "' is not one of conv4, resnet12, python");
}

at::Tensor checkpoint_safe_batch_norm(torch::nn::BatchNorm2d& bn, const at::Tensor& x, bool training, bool recompute) {
  if (training && !recompute) bn->num_batches_tracked.add_(1);
  const double momentum = recompute ? 0.0 : bn->options.momentum().value_or(0.1);
  return at::batch_norm(x, bn->weight, bn->bias, bn->running_mean, bn->running_var, training, momentum,
                        bn->options.eps(), /*cudnn_enabled=*/true);
}

}  // namespace protonet
