#include "model.hpp"

#include <memory>
#include <string>

#include <ATen/ATen.h>
#include <mlh/runtime/grad_checkpoint.hpp>

#include "fused_block.hpp"

namespace protonet {

Conv4Impl::Conv4Impl(int64_t in_channels, int64_t width) : width_(width) {
  int64_t in = in_channels;
  for (int i = 0; i < 4; ++i) {
    // Registered as "blocks.<i>.conv" / "blocks.<i>.bn" so exported weights read naturally.
    auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(in, width, 3).padding(1));
    auto norm = torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(width));
    convs_.push_back(register_module("block" + std::to_string(i) + "_conv", conv));
    norms_.push_back(register_module("block" + std::to_string(i) + "_bn", norm));
    in = width;
  }
}

at::Tensor Conv4Impl::block(size_t i, const at::Tensor& x, bool recompute) {
  at::Tensor y = convs_[i]->forward(x);
  auto& bn = norms_[i];
  const bool training = is_training();
  const double momentum = bn->options.momentum().value_or(0.1);
  if (training && !recompute) bn->num_batches_tracked.add_(1);
  const double block_momentum = recompute ? 0.0 : momentum;
  if (training && fused_cpu_block_ && fused_block_applies(y))
    return batch_norm_relu_pool(y, bn->weight, bn->bias, bn->running_mean, bn->running_var, block_momentum,
                                bn->options.eps());
  // As BatchNorm2d's forward, with momentum 0 on a recomputation (see model.hpp).
  y = at::batch_norm(y, bn->weight, bn->bias, bn->running_mean, bn->running_var, training,
                     block_momentum, bn->options.eps(), /*cudnn_enabled=*/true);
  return at::max_pool2d(at::relu(y), {2, 2});
}

at::Tensor Conv4Impl::forward(const at::Tensor& x, bool checkpointing) {
  at::Tensor h = x;
  for (size_t i = 0; i < convs_.size(); ++i) {
    // The first call of the function is the forward; later ones are recomputations. The
    // counter is shared by every copy the checkpoint makes of the function.
    auto calls = std::make_shared<int>(0);
    h = mlh::rt::maybe_checkpoint(
        checkpointing,
        [this, i, calls](const at::Tensor& in) { return block(i, in, (*calls)++ > 0); }, h);
  }
  return h.flatten(1);
}

int64_t Conv4Impl::embedding_dim(int64_t height, int64_t width) const {
  for (int i = 0; i < 4; ++i) {
    height /= 2;
    width /= 2;
  }
  return width_ * height * width;
}

double Conv4Impl::training_flops_per_image(int64_t channels, int64_t height, int64_t width) const {
  double total = 0;
  int64_t in = channels;
  for (int i = 0; i < 4; ++i) {
    const double forward = 2.0 * 9.0 * static_cast<double>(in) * static_cast<double>(width_) *
                           static_cast<double>(height) * static_cast<double>(width);
    total += i == 0 ? 2 * forward : 3 * forward;  // forward + weight gradient (+ input gradient)
    in = width_;
    height /= 2;
    width /= 2;
  }
  return total;
}

std::string Conv4Impl::layers() const { return "4 blocks x " + std::to_string(width_) + " channels"; }

std::map<std::string, std::string> Conv4Impl::export_metadata(int64_t in_channels, const std::string& distance) const {
  return {{"model", "protonet-conv4"}, {"in_channels", std::to_string(in_channels)},
          {"width", std::to_string(width_)}, {"distance", distance}};
}

std::string Conv4Impl::foreign_weight_name(const std::string& name) const { return reference_weight_name(name); }

std::string reference_weight_name(const std::string& name) {
  // encoder.<block>.<0: conv, 1: batch norm>.<tensor>
  const std::string prefix = "encoder.";
  if (name.compare(0, prefix.size(), prefix) != 0) return name;
  const size_t block_end = name.find('.', prefix.size());
  if (block_end == std::string::npos || block_end + 2 >= name.size() || name[block_end + 2] != '.') return name;
  const std::string block = name.substr(prefix.size(), block_end - prefix.size());
  const char layer = name[block_end + 1];
  if (block.size() != 1 || block[0] < '0' || block[0] > '3' || (layer != '0' && layer != '1')) return name;
  return "block" + block + (layer == '0' ? "_conv" : "_bn") + name.substr(block_end + 2);
}

}  // namespace protonet
