// The Conv-4 embedding network of Snell et al. (2017): four blocks of 3x3 convolution
// (`width` filters, padding 1) -> batch norm -> ReLU -> 2x2 max pool, then flattened.
// 28x28x1 inputs embed to width x 1 x 1 (64-d at width 64), 84x84x3 to width x 5 x 5 (1600-d).
//
// Gradient checkpointing (forward(x, true)) recomputes each block in the backward pass.
// A block's batch norm would then update its running statistics twice per step (once in the
// forward, once in the recomputation); the recomputation runs it with momentum 0, which
// normalises with the same batch statistics (so gradients equal the plain path's) and leaves
// the running statistics as the forward left them. So a checkpointed step changes the model
// exactly as a plain one does, in train and in eval mode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include "encoder.hpp"

namespace protonet {

class Conv4Impl : public EncoderImpl {
 public:
  explicit Conv4Impl(int64_t in_channels = 1, int64_t width = 64);

  at::Tensor forward(const at::Tensor& x, bool checkpointing = false) override;
  int64_t embedding_dim(int64_t height, int64_t width) const override;
  double training_flops_per_image(int64_t channels, int64_t height, int64_t width) const override;
  std::string name() const override { return "Conv-4"; }
  std::string layers() const override;
  std::string checkpointed_part() const override { return "Conv-4 block"; }
  // As every Conv-4 run has exported since the first: model "protonet-conv4".
  std::map<std::string, std::string> export_metadata(int64_t in_channels, const std::string& distance) const override;
  std::string foreign_weight_name(const std::string& name) const override;
  // Training on the CPU in fp32 fuses each block's batch norm, ReLU and pooling
  // (fused_block.hpp); off, ATen's three ops run (the benchmark compares the two).
  bool has_fused_cpu_block() const override { return true; }
  void set_fused_cpu_block(bool on) override { fused_cpu_block_ = on; }

 private:
  at::Tensor block(size_t i, const at::Tensor& x, bool recompute);

  std::vector<torch::nn::Conv2d> convs_;
  std::vector<torch::nn::BatchNorm2d> norms_;
  int64_t width_;
  bool fused_cpu_block_ = true;
};
TORCH_MODULE(Conv4);

// The name Conv4 gives a tensor of the reference's model (jakesnell/prototypical-networks,
// whose best_model.pt is the whole Protonet module): its encoder is a Sequential of
// Sequential(Conv2d, BatchNorm2d, ReLU, MaxPool2d) blocks, so "encoder.2.0.weight" is
// "block2_conv.weight" and "encoder.2.1.running_mean" "block2_bn.running_mean". Other names
// come back unchanged. For --init-from (TrainingSession::init_weights).
std::string reference_weight_name(const std::string& name);

}  // namespace protonet
