#include "python_encoder.hpp"

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>

#include "config.hpp"

namespace protonet {

namespace {

[[noreturn]] void contract(const std::string& module, const std::string& what) {
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'model.module': " + module + ": " + what +
                                                 " (an encoder takes images [batch, channels, height, width] and "
                                                 "returns embeddings [batch, D]; docs/your-network-in-pytorch.md)");
}

// Keyword arguments: in_channels, then the user's (which may not set it again).
nlohmann::json constructor_kwargs(const Config& cfg, int64_t in_channels) {
  if (cfg.python_kwargs.contains("in_channels"))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'model.kwargs': in_channels comes from the data (" +
                                                   std::to_string(in_channels) + "); leave it out");
  nlohmann::json kwargs = cfg.python_kwargs;
  kwargs["in_channels"] = in_channels;
  return kwargs;
}

}  // namespace

PythonEncoderImpl::PythonEncoderImpl(const Config& cfg, int64_t in_channels)
    : kwargs_(cfg.python_kwargs), in_channels_(in_channels) {
  mlh::rt::PythonModuleSpec spec = mlh::rt::parse_python_module("model.module", cfg.python_module);
  class_name_ = spec.class_name;
  spec.kwargs = constructor_kwargs(cfg, in_channels);
  try {
    module_ = mlh::rt::load_python_module(spec);
  } catch (const mlh::Error& e) {
    throw mlh::Error(e.code(), std::string("config field 'model.module': ") + e.what());
  }
  module_->share_tensors_with(*this);
  const int64_t h = cfg.train_data.height, w = cfg.train_data.width;
  const std::string images = "[2, " + std::to_string(in_channels) + ", " + std::to_string(h) + ", " + std::to_string(w) + "]";
  std::vector<at::Tensor> outs;
  try {
    at::NoGradGuard no_grad;
    module_->train(false);
    outs = module_->forward({at::zeros({2, in_channels, h, w})});
    module_->train(is_training());
  } catch (const mlh::Error& e) {
    throw mlh::Error(e.code(), std::string("config field 'model.module': ") + e.what() + " (on images " + images + ")");
  }
  if (outs.size() != 1)
    contract(module_->name(), "for images " + images + " forward returned " + std::to_string(outs.size()) +
                                  " tensors, not one");
  const at::Tensor& out = outs[0];
  if (out.dim() != 2 || out.size(0) != 2 || out.size(1) < 1)
    contract(module_->name(), "for images " + images + " forward returned " + mlh::rt::shape_text(out) +
                                  (out.dim() > 2 ? ": flatten the features (x.flatten(1))" : ""));
  if (!at::isFloatingType(out.scalar_type()))
    contract(module_->name(), "forward returned " + std::string(c10::toString(out.scalar_type())) + " embeddings, not floats");
  embedding_dims_[{h, w}] = out.size(1);
}

at::Tensor PythonEncoderImpl::forward(const at::Tensor& x, bool) {
  std::vector<at::Tensor> out = module_->forward({x});
  if (out.size() != 1 || out[0].dim() != 2 || out[0].size(0) != x.size(0))
    contract(module_->name(), "for images " + mlh::rt::shape_text(x) + " forward returned " +
                                  (out.size() == 1 ? mlh::rt::shape_text(out[0]) : std::to_string(out.size()) + " tensors"));
  return out[0];
}

int64_t PythonEncoderImpl::embedding_dim(int64_t height, int64_t width) const {
  auto it = embedding_dims_.find({height, width});
  if (it != embedding_dims_.end()) return it->second;
  at::NoGradGuard no_grad;
  const bool training = is_training();
  module_->train(false);
  const at::Device device = parameters().empty() ? at::Device(at::kCPU) : parameters().front().device();
  const std::vector<at::Tensor> out = module_->forward({at::zeros({2, in_channels_, height, width}, device)});
  module_->train(training);
  return embedding_dims_[{height, width}] = out.at(0).size(-1);
}

void PythonEncoderImpl::train(bool on) {
  torch::nn::Module::train(on);
  module_->train(on);
}

std::map<std::string, std::string> PythonEncoderImpl::export_metadata(int64_t in_channels, const std::string& distance) const {
  return {{"model", "protonet-python"},
          {"module", module_->name()},
          {"kwargs", kwargs_.dump()},
          {"in_channels", std::to_string(in_channels)},
          {"distance", distance}};
}

}  // namespace protonet
