// The encoder a ProtoNet run embeds its images with, chosen by the config's model.encoder:
// "conv4" (Conv-4, model.hpp) or "resnet12" (ResNet-12, resnet12.hpp). Everything else in the
// plugin (the trainer, the commands, describe_run, the benchmark) sees only this interface,
// and make_encoder is the one place that knows which encoders there are.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>

namespace protonet {

struct Config;

class EncoderImpl : public torch::nn::Module {
 public:
  // x: B x C x H x W float; returns B x D embeddings. `checkpointing` recomputes each block
  // (Conv-4) or stage (ResNet-12) in the backward pass, changing the model exactly as a plain
  // step does (the batch norms' running statistics included).
  virtual at::Tensor forward(const at::Tensor& x, bool checkpointing = false) = 0;

  // Embedding size for an input of this height and width.
  virtual int64_t embedding_dim(int64_t height, int64_t width) const = 0;
  int64_t parameter_count() const;
  // Floating-point operations of one training image through the convolutions (forward, and
  // backward for the weights and the inputs, less the input gradient of the layers that read
  // the image, which nothing needs); batch norm, activations and pooling are left out, as
  // model FLOP counts do.
  virtual double training_flops_per_image(int64_t channels, int64_t height, int64_t width) const = 0;

  // "Conv-4" or "ResNet-12", and the layers in a line ("4 blocks x 64 channels").
  virtual std::string name() const = 0;
  virtual std::string layers() const = 0;
  // What gradient checkpointing recomputes one at a time ("Conv-4 block", "ResNet-12 stage");
  // "" where it recomputes nothing (the plan then says it has no effect).
  virtual std::string checkpointed_part() const = 0;
  // model.safetensors' metadata besides "format" (what a loader needs to rebuild the encoder).
  virtual std::map<std::string, std::string> export_metadata(int64_t in_channels, const std::string& distance) const = 0;
  // The encoder's name for a tensor of another implementation's file (--init-from); unknown
  // names come back unchanged.
  virtual std::string foreign_weight_name(const std::string& name) const { return name; }

  // Conv-4 only: its batch norm -> ReLU -> pool fused for CPU training (fused_block.hpp).
  virtual bool has_fused_cpu_block() const { return false; }
  virtual void set_fused_cpu_block(bool) {}
};

using Encoder = std::shared_ptr<EncoderImpl>;

// The config's encoder (model.encoder, width, model.drop_rate) for images of `in_channels`.
Encoder make_encoder(const Config& cfg, int64_t in_channels);

// at::batch_norm as BatchNorm2d's forward, for a block that gradient checkpointing may run
// twice: on the recomputation (`recompute`) momentum 0 normalises with the same batch
// statistics (so the gradients equal the plain path's) and leaves the running statistics, and
// num_batches_tracked, as the forward left them.
at::Tensor checkpoint_safe_batch_norm(torch::nn::BatchNorm2d& bn, const at::Tensor& x, bool training, bool recompute);

}  // namespace protonet
