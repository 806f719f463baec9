// The python actor-critic: the user's torch.nn.Module (network.module) as PPO's policy and
// value network, through the runtime's embedded Python (mlh/runtime/python_module.hpp).
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/python_module.hpp>

#include "networks/internal.hpp"
#include "networks/networks.hpp"

namespace ppo::detail {
namespace {

std::string shape_list(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += ", " + std::to_string(d);
  return s;
}

class PythonActorCritic : public ActorCritic {
 public:
  explicit PythonActorCritic(const NetworkSpec& spec) : spec_(spec) {
    mlh::rt::PythonModuleSpec module = mlh::rt::parse_python_module("network.module", spec.module);
    for (const char* reserved : {"observation_shape", "num_actions"})
      if (spec.kwargs.contains(reserved))
        throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("config field 'network.kwargs': ") + reserved +
                                                       " comes from the environment; leave it out");
    module.kwargs = spec.kwargs;
    module.kwargs["observation_shape"] = spec.observation_shape;
    module.kwargs["num_actions"] = spec.num_actions;
    try {
      module_ = mlh::rt::load_python_module(module);
    } catch (const mlh::Error& e) {
      throw mlh::Error(e.code(), std::string("config field 'network.module': ") + e.what());
    }
    module_->share_tensors_with(*this);
    check_contract();
  }

  PolicyOutput forward_normalized(const at::Tensor& observations) override {
    std::vector<at::Tensor> out = module_->forward({observations});
    const int64_t batch = observations.size(0);
    const bool ok = out.size() == 2 && out[0].dim() == 2 && out[0].size(0) == batch &&
                    out[0].size(1) == spec_.num_actions && out[1].numel() == batch &&
                    (out[1].dim() == 1 || (out[1].dim() == 2 && out[1].size(1) == 1));
    if (!ok) {
      std::string got;
      for (size_t i = 0; i < out.size(); ++i) got += (i ? ", " : "") + mlh::rt::shape_text(out[i]);
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                       "config field 'network.module': " + module_->name() + ": for observations " +
                           mlh::rt::shape_text(observations) + " forward returned (" + got + "), not (" +
                           (spec_.continuous_actions ? "action means" : "logits") + " [" + std::to_string(batch) + ", " +
                           std::to_string(spec_.num_actions) + "], values [" + std::to_string(batch) +
                           "]) (docs/your-network-in-pytorch.md)");
    }
    return {out[0], out[1].reshape({batch})};
  }

  const NetworkSpec& spec() const override { return spec_; }

  void train(bool on) override {
    torch::nn::Module::train(on);
    module_->train(on);
  }

 private:
  // forward on a dummy batch of two observations, in eval mode without gradients (so nothing
  // the module keeps changes), before any training.
  void check_contract() {
    std::vector<int64_t> shape{2};
    shape.insert(shape.end(), spec_.observation_shape.begin(), spec_.observation_shape.end());
    at::NoGradGuard no_grad;
    module_->train(false);
    try {
      forward_normalized(at::zeros(shape));
    } catch (const mlh::Error& e) {
      throw mlh::Error(e.code(), std::string(e.what()).find("config field") == 0
                                     ? e.what()
                                     : std::string("config field 'network.module': ") + e.what() +
                                           " (on observations [2" + shape_list(spec_.observation_shape) + "])");
    }
    module_->train(is_training());
  }

  NetworkSpec spec_;
  std::unique_ptr<mlh::rt::PythonModule> module_;
};

}  // namespace

std::shared_ptr<ActorCritic> make_python(const NetworkSpec& spec) { return std::make_shared<PythonActorCritic>(spec); }

}  // namespace ppo::detail
