#include "mlh/runtime/seed.hpp"

#include <algorithm>
#include <mutex>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include "backends/backend.hpp"
#include "mlh/plugin.hpp"

namespace mlh::rt {

namespace {

// Generator methods are not thread-safe; LibTorch's own callers hold the generator's mutex.
at::Tensor state_of(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_state_of(at::Generator gen, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// Every CUDA GPU's generator, checkpointed as rng.cuda.<index>.
std::vector<at::Generator> gpu_generators() { return backends::named("cuda").generators(); }

at::Tensor bytes_of(const std::string& text) {
  at::Tensor t = at::empty({static_cast<int64_t>(text.size())}, at::kByte);
  std::copy(text.begin(), text.end(), t.data_ptr<uint8_t>());
  return t;
}

const at::Tensor& required(const std::map<std::string, at::Tensor>& tensors, const std::string& key) {
  auto it = tensors.find(key);
  if (it == tensors.end() || !it->second.defined() || it->second.scalar_type() != at::kByte || it->second.dim() != 1)
    throw Error(MLH_ERR_INVALID_ARGUMENT, "RNG state '" + key + "': expected a 1-D uint8 tensor");
  return it->second;
}

}  // namespace

std::mt19937_64& host_rng() {
  static std::mt19937_64 rng;
  return rng;
}

void seed_everything(uint64_t seed) {
  at::manual_seed(seed);  // the CPU generator and every CUDA device's
  host_rng().seed(seed);
}

std::map<std::string, at::Tensor> RngState::to_tensors() const {
  std::map<std::string, at::Tensor> out{{"rng.cpu", cpu}, {"rng.host", bytes_of(host)}};
  for (size_t i = 0; i < cuda.size(); ++i) out["rng.cuda." + std::to_string(i)] = cuda[i];
  return out;
}

RngState RngState::from_tensors(const std::map<std::string, at::Tensor>& tensors) {
  RngState state;
  state.cpu = required(tensors, "rng.cpu");
  const at::Tensor host = required(tensors, "rng.host").contiguous();
  state.host.assign(host.data_ptr<uint8_t>(), host.data_ptr<uint8_t>() + host.numel());
  for (size_t i = 0;; ++i) {
    const std::string key = "rng.cuda." + std::to_string(i);
    if (!tensors.count(key)) break;
    state.cuda.push_back(required(tensors, key));
  }
  return state;
}

RngState capture_rng_state() {
  RngState state;
  state.cpu = state_of(at::detail::getDefaultCPUGenerator());
  for (const at::Generator& gen : gpu_generators()) state.cuda.push_back(state_of(gen));
  std::ostringstream host;
  host << host_rng();
  state.host = host.str();
  return state;
}

void restore_rng_state(const RngState& state) {
  std::istringstream host(state.host);
  std::mt19937_64 rng;
  if (!(host >> rng)) throw Error(MLH_ERR_INVALID_ARGUMENT, "RNG state 'rng.host': not a saved std::mt19937_64");
  set_state_of(at::detail::getDefaultCPUGenerator(), state.cpu);
  const std::vector<at::Generator> gpus = gpu_generators();
  for (size_t i = 0; i < std::min(state.cuda.size(), gpus.size()); ++i) set_state_of(gpus[i], state.cuda[i]);
  host_rng() = rng;
}

}  // namespace mlh::rt
