// model.encoder=python: the user's torch.nn.Module (model.module, file.py:Class) as ProtoNet's
// encoder, through the runtime's embedded Python (mlh/runtime/python_module.hpp). Its
// parameters and buffers are registered here under their Python names, so checkpoints,
// model.safetensors and --init-from see the module's own state_dict.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <mlh/runtime/python_module.hpp>

#include "encoder.hpp"

namespace protonet {

class PythonEncoderImpl : public EncoderImpl {
 public:
  // Builds the class with in_channels and model.kwargs, then checks its contract on a dummy
  // batch of the config's image size: images [2, C, H, W] in, embeddings [2, D] out. Throws
  // mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the file, the class and the shapes.
  PythonEncoderImpl(const Config& cfg, int64_t in_channels);

  // Gradient checkpointing is not applied to a Python module (its forward is one opaque
  // call): `checkpointing` is ignored, and checkpointed_part() is "".
  at::Tensor forward(const at::Tensor& x, bool checkpointing = false) override;
  int64_t embedding_dim(int64_t height, int64_t width) const override;
  // Unknown for a module we cannot see into: 0 (the benchmark then reports no FLOP rate).
  double training_flops_per_image(int64_t, int64_t, int64_t) const override { return 0; }
  std::string name() const override { return class_name_; }
  std::string layers() const override { return "your module " + module_->name(); }
  std::string checkpointed_part() const override { return ""; }
  // model "protonet-python" with the module, its keyword arguments and in_channels, which
  // mlhost.load_run builds the class from.
  std::map<std::string, std::string> export_metadata(int64_t in_channels, const std::string& distance) const override;
  void train(bool on) override;

 private:
  std::unique_ptr<mlh::rt::PythonModule> module_;
  std::string class_name_;
  nlohmann::json kwargs_;
  int64_t in_channels_;
  mutable std::map<std::pair<int64_t, int64_t>, int64_t> embedding_dims_;
};

}  // namespace protonet
