// ResNet-12 as the few-shot literature uses it (MetaOptNet, Lee et al. 2019; FEAT, Ye et al.
// 2020): four stages layer1..layer4 of one BasicBlock each,
//   conv1 3x3 -> bn1 -> LeakyReLU(0.1) -> conv2 3x3 -> bn2 -> LeakyReLU(0.1) -> conv3 3x3 -> bn3,
//   plus the shortcut downsample = 1x1 conv -> batch norm; sum -> LeakyReLU(0.1) -> 2x2 max
//   pool (floor),
// then, in training only, FEAT's regularisation at model.drop_rate: dropout after stages 1 and
// 2, DropBlock (block size 5, or the feature map's side where smaller) after stages 3 and 4.
// Global average pooling after layer4 gives a width*10-d embedding. Stage widths are
// width x (1, 2.5, 5, 10): 64-160-320-640 at width 64 (12,424,320 parameters on RGB input).
// Convolutions have no bias. Parameter and buffer names are FEAT's encoder's
// (layer1.0.conv1.weight, layer1.0.bn1.running_mean, layer1.0.downsample.0.weight,
// layer1.0.downsample.1.weight, ...), so its weights load with --init-from.
//
// The DropBlock rate is constant (FEAT ramps it up over its first 40,000 batches; ProtoNet's
// schedules are shorter than that ramp). Gradient checkpointing recomputes each stage; the
// dropout and DropBlock masks are drawn once, after the checkpointed stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include "encoder.hpp"

namespace protonet {

// One stage's residual block (registered as layer<i>.0).
class ResNetBlockImpl : public torch::nn::Module {
 public:
  ResNetBlockImpl(int64_t in_channels, int64_t out_channels);
  // The block up to and including its max pool; `recompute`: a checkpoint's recomputation
  // (batch norm leaves the running statistics alone, checkpoint_safe_batch_norm).
  at::Tensor forward(const at::Tensor& x, bool recompute);

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  // The shortcut, registered as the list `downsample` (downsample.0, downsample.1).
  torch::nn::Conv2d shortcut_conv{nullptr};
  torch::nn::BatchNorm2d shortcut_bn{nullptr};
};
TORCH_MODULE(ResNetBlock);

class ResNet12Impl : public EncoderImpl {
 public:
  // `width` must be even (stage 2 has width * 2.5 channels); `drop_rate` in [0, 1).
  ResNet12Impl(int64_t in_channels, int64_t width, double drop_rate);

  at::Tensor forward(const at::Tensor& x, bool checkpointing = false) override;
  int64_t embedding_dim(int64_t height, int64_t width) const override;
  double training_flops_per_image(int64_t channels, int64_t height, int64_t width) const override;
  std::string name() const override { return "ResNet-12"; }
  std::string layers() const override;
  std::string checkpointed_part() const override { return "ResNet-12 stage"; }
  // model "protonet-resnet12", encoder "resnet12", in_channels, width, distance.
  std::map<std::string, std::string> export_metadata(int64_t in_channels, const std::string& distance) const override;

  // The channels of the four stages: width x (1, 2.5, 5, 10).
  const std::vector<int64_t>& stage_widths() const { return widths_; }
  double drop_rate() const { return drop_rate_; }

 private:
  // Dropout (stages 1, 2) or DropBlock (stages 3, 4) after stage `i` in training mode.
  at::Tensor regularise(size_t i, const at::Tensor& x) const;

  std::vector<ResNetBlock> blocks_;
  std::vector<int64_t> widths_;
  int64_t width_;
  double drop_rate_;
};
TORCH_MODULE(ResNet12);

// DropBlock (Ghiasi et al. 2018) as FEAT computes it: seeds drawn with probability
// rate / block^2 x H x W / ((H - block + 1) x (W - block + 1)) over the positions where a
// block fits, each seed zeroing a block x block square of its channel, and the rest scaled by
// (elements / kept elements). `block` is clamped to the feature map's smaller side.
at::Tensor drop_block(const at::Tensor& x, double rate, int64_t block);

}  // namespace protonet
