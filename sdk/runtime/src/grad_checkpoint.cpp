#include "mlh/runtime/grad_checkpoint.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "mlh/device_traits.hpp"
#include "mlh/plugin.hpp"
#include "mlh/runtime/compat.hpp"
#include "mlh/runtime/plan_effects.hpp"

namespace mlh::rt {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The device types whose autocast state a recomputation must replay: those of the trait
// table (mlh/device_traits.hpp) whose autocast this LibTorch runs.
const std::vector<c10::DeviceType>& autocast_devices() {
  static const std::vector<c10::DeviceType> types = [] {
    std::vector<c10::DeviceType> all;
    for (const DeviceTraits& t : kDeviceTraits)
      if (t.fp16_autocast || (t.bf16_autocast && MLH_TORCH_VERSION_AT_LEAST(t.bf16_torch[0], t.bf16_torch[1])))
        all.push_back(c10::Device(t.type).type());
    return all;
  }();
  return types;
}

// Whether autocast is on, and in which type, for each of those device types.
struct AutocastState {
  std::vector<bool> enabled;
  std::vector<c10::ScalarType> dtype;

  static AutocastState current() {
    AutocastState s;
    for (c10::DeviceType type : autocast_devices()) {
      s.enabled.push_back(compat::autocast_enabled(type));
      s.dtype.push_back(compat::autocast_dtype(type));
    }
    return s;
  }
  void apply() const {
    const std::vector<c10::DeviceType>& types = autocast_devices();
    for (size_t i = 0; i < types.size(); ++i) {
      compat::set_autocast_enabled(types[i], enabled[i]);
      compat::set_autocast_dtype(types[i], dtype[i]);
    }
  }
};

// The random and autocast state of the forward pass, re-established for the recomputation.
// The autograd engine runs backward on its own threads, whose thread-local autocast state
// is not the forward's, so it has to be carried over explicitly.
struct ForwardState : torch::CustomClassHolder {
  CheckpointFnN fn;
  at::Tensor cpu_rng;
  std::optional<c10::Device> device;  // the first input's on an accelerator with a generator
  at::Tensor device_rng;
  AutocastState autocast;
};

at::Tensor rng_state(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_rng_state(at::Generator gen, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// Sets the saved RNG and autocast state for its lifetime and puts the current one back after,
// so that the recomputation does not disturb the random streams the rest of backward sees.
class ForwardStateScope {
 public:
  explicit ForwardStateScope(const ForwardState& saved) : saved_(saved) {
    cpu_rng_ = rng_state(at::detail::getDefaultCPUGenerator());
    set_rng_state(at::detail::getDefaultCPUGenerator(), saved.cpu_rng);
    if (saved.device) {
      device_rng_ = rng_state(at::globalContext().defaultGenerator(*saved.device));
      set_rng_state(at::globalContext().defaultGenerator(*saved.device), saved.device_rng);
    }
    autocast_ = AutocastState::current();
    saved.autocast.apply();
    // As an autocast scope would: the weights cast during the recomputation leave the cache
    // when the outermost scope on this thread ends.
    at::autocast::increment_nesting();
  }
  ~ForwardStateScope() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    autocast_.apply();
    set_rng_state(at::detail::getDefaultCPUGenerator(), cpu_rng_);
    if (saved_.device) set_rng_state(at::globalContext().defaultGenerator(*saved_.device), device_rng_);
  }
  ForwardStateScope(const ForwardStateScope&) = delete;
  ForwardStateScope& operator=(const ForwardStateScope&) = delete;

 private:
  const ForwardState& saved_;
  at::Tensor cpu_rng_, device_rng_;
  AutocastState autocast_;
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  // `anchor` is an empty tensor that requires grad: without it, a checkpoint whose inputs do
  // not require grad (the model's input batch) would give an output that does not either,
  // and the parameters used inside would get no gradient.
  static variable_list forward(AutogradContext* ctx, const CheckpointFnN& fn, at::TensorList inputs,
                               const at::Tensor& anchor) {
    (void)anchor;
    auto saved = c10::make_intrusive<ForwardState>();
    saved->fn = fn;
    saved->cpu_rng = rng_state(at::detail::getDefaultCPUGenerator());
    // A known accelerator's own generator (an unknown backend may have none): dropout
    // there draws from it, and the recomputation must draw the same.
    for (const at::Tensor& x : inputs) {
      const DeviceTraits& traits = device_traits(x.device().str());
      if (traits.accelerator && *traits.type) {
        saved->device = x.device();
        saved->device_rng = rng_state(at::globalContext().defaultGenerator(x.device()));
        break;
      }
    }
    saved->autocast = AutocastState::current();
    ctx->saved_data["state"] = c10::IValue::make_capsule(saved);
    ctx->save_for_backward(inputs.vec());
    // Function::apply runs this with grad mode off: fn records no graph, keeps no activations.
    return fn(inputs.vec());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = c10::static_intrusive_pointer_cast<ForwardState>(ctx->saved_data["state"].toCapsule());
    variable_list inputs;
    for (const at::Tensor& x : ctx->get_saved_variables())
      inputs.push_back(x.detach().requires_grad_(x.requires_grad()));

    variable_list outputs;
    {
      ForwardStateScope scope(*saved);
      at::AutoGradMode grad_mode(true);
      outputs = saved->fn(inputs);
    }
    variable_list with_grad, grads;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].requires_grad() && grad_outputs[i].defined()) {
        with_grad.push_back(outputs[i]);
        grads.push_back(grad_outputs[i]);
      }
    // Reentrant backward through the recomputed graph: accumulates the parameters' .grad and
    // the detached inputs' .grad.
    if (!with_grad.empty()) torch::autograd::backward(with_grad, grads);

    // One gradient per argument of forward: none for fn, the inputs', none for the anchor.
    variable_list result{at::Tensor()};
    for (const at::Tensor& x : inputs) result.push_back(x.grad());
    result.emplace_back();  // the anchor
    return result;
  }
};

}  // namespace

std::vector<at::Tensor> checkpoint(const CheckpointFnN& fn, const std::vector<at::Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw Error(MLH_ERR_INVALID_ARGUMENT, "checkpoint: input " + std::to_string(i) + " is an undefined tensor");
  if (!at::GradMode::is_enabled()) return fn(inputs);
  count_plan_effect("gradient_checkpointing", "checkpointed_calls");
  const at::Tensor anchor = at::empty({0}, at::kFloat).requires_grad_();
  return CheckpointFunction::apply(fn, at::TensorList(inputs), anchor);
}

at::Tensor checkpoint(const CheckpointFn& fn, const at::Tensor& input) {
  // By value: the recomputation in backward calls it after this function has returned.
  const CheckpointFnN wrapped = [fn](const std::vector<at::Tensor>& xs) { return std::vector<at::Tensor>{fn(xs[0])}; };
  return checkpoint(wrapped, std::vector<at::Tensor>{input})[0];
}

at::Tensor maybe_checkpoint(bool enabled, const CheckpointFn& fn, const at::Tensor& input) {
  return enabled ? checkpoint(fn, input) : fn(input);
}

}  // namespace mlh::rt
