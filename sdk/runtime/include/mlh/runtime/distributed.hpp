// Data-parallel training across processes on PyTorch's c10d: every rank holds the same
// model, trains on its own share of the data, and averages gradients with the others before
// each optimizer step, so that all ranks stay identical and together train on the global
// batch (per-rank batch x world size).
//
//   mlh::rt::Distributed dist(ctx, plan.device);     // joins the group when world_size > 1
//   mlh::rt::seed_everything(mlh::rt::seed_for_rank(cfg.seed, ctx.rank()));
//   Model net; dist.broadcast_module(*net);         // rank 0's initial weights everywhere
//   checkpoints.share_with(dist);                    // rank 0 alone writes checkpoints
//   ... loss.backward(); dist.average_gradients(net->parameters()); optimizer.step();
//   if (dist.should_stop(ctx)) ...                   // every rank stops at the same step
//
// With world_size 1 (no launcher) every call is a no-op, so one loop serves both.
//
// The group forms through a c10d TCPStore at MASTER_ADDR:MASTER_PORT, the environment torchrun
// sets and the host sets for the workers it starts. Rank 0 serves it, unless torchrun's agent
// already does (TORCHELASTIC_USE_AGENT_STORE=True): then every rank joins the agent's store,
// under the prefix PyTorch's own workers use for that restart (/worker/attempt_N). Gloo carries CPU
// tensors; NCCL carries CUDA tensors when this LibTorch was built with it (MLH_RT_HAS_NCCL),
// else Gloo does. MPS is refused. A collective that does not complete within the timeout
// (MLH_DIST_TIMEOUT_S, default 300 s) because a peer died throws mlh::Error naming this rank.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlh {
class RunContext;
}
namespace torch::nn {
class Module;
}

namespace mlh::rt {

// Where a rank finds its group: the run context's rank, world size and local rank, and the
// rendezvous point from the environment.
struct DistributedSettings {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR
  int master_port = 29500;                // MASTER_PORT
  // torchrun's agent serves the store (TORCHELASTIC_USE_AGENT_STORE=True); every rank's keys
  // then live under this prefix ("/worker/attempt_" TORCHELASTIC_RESTART_COUNT).
  bool agent_store = false;
  std::string agent_store_prefix;
  std::chrono::milliseconds timeout{300000};  // MLH_DIST_TIMEOUT_S
  bool group_of_one = false;  // form a group even for world_size 1 (to check a backend initializes)
  // The c10d backend the plan chose (its distributed.backend: "gloo" or "nccl"); empty: the
  // device's own (mlh/device_traits.hpp), as the host would have chosen.
  std::string backend;
  // Asked while waiting for the other ranks at the rendezvous: true ends the wait at once with
  // mlh::Error(MLH_ERR_CANCELLED), so a stop (Ctrl-C, a scheduler's SIGTERM) is not held up
  // for the whole timeout by ranks that never come. from_context asks the run's should_stop().
  std::function<bool()> should_stop;

  // Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming a malformed variable, or a rank
  // outside [0, world_size).
  static DistributedSettings from_context(const mlh::RunContext& ctx);
};

// The c10d backend a group on `device` ("cuda:0") uses: `planned` where the plan names one,
// else the device's (mlh::DeviceTraits::distributed; gloo for a type the table does not know,
// as the host plans it). A device no backend carries (MPS) or a backend this runtime does not
// speak is mlh::Error(MLH_ERR_UNSUPPORTED), saying so.
std::string communication_backend(const std::string& planned, const std::string& device);

// A different random stream per rank from one configured seed; rank 0 keeps `seed`, so a
// one-process run is unchanged. Seed with it before the model is built only when the model
// is then broadcast (its initial weights would differ otherwise).
uint64_t seed_for_rank(uint64_t seed, int rank);

class Distributed {
 public:
  // A single process: every operation is a no-op.
  Distributed();
  // Joins the group when settings.world_size > 1; blocks until every rank has joined or the
  // timeout passes (mlh::Error naming the address).
  Distributed(const DistributedSettings& settings, c10::Device device);
  Distributed(const mlh::RunContext& ctx, c10::Device device);
  ~Distributed();
  Distributed(const Distributed&) = delete;
  Distributed& operator=(const Distributed&) = delete;

  bool enabled() const { return group_ != nullptr; }  // in a group: collectives do something
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int local_rank() const { return local_rank_; }
  bool is_main() const { return rank_ == 0; }
  std::string backend() const;  // "gloo", "nccl", or "none"
  // Where the ranks met: "torchrun agent" (the store torchrun's agent serves), "rank 0" (the
  // store rank 0 serves), or "none" (no group).
  const std::string& store() const { return store_; }

  // Rank 0's parameters and buffers replace every other rank's.
  void broadcast_module(torch::nn::Module& module);
  // Rank 0's values of these tensors, in place, everywhere.
  void broadcast(std::vector<at::Tensor> tensors);

  // Averages the gradients of `parameters` over the ranks, in buckets of about
  // bucket_bytes (one all-reduce each, all in flight at once). A parameter without a
  // gradient counts as zeros and gets a gradient, so ranks that used different parts of a
  // model still agree on the layout.
  void average_gradients(const std::vector<at::Tensor>& parameters, int64_t bucket_bytes = 25 << 20);

  // In-place sum, and mean, over the ranks (a flat gradient buffer, a metric tensor).
  void all_reduce_sum(at::Tensor& tensor);
  void all_reduce_mean(at::Tensor& tensor);
  // The mean of a scalar over the ranks (for metrics and decisions that must agree).
  double mean(double value);
  // True on every rank when it is true on any.
  bool any(bool value);
  // Every rank's tensor (same shape and dtype everywhere), in rank order.
  std::vector<at::Tensor> all_gather(const at::Tensor& tensor);
  void barrier();

  // True when every rank holds exactly the same parameters and buffers (a fingerprint of
  // each rank's values compared): data-parallel training keeps them identical, so false
  // means the ranks diverged (a rank updated on its own). True with one process.
  bool parameters_agree(torch::nn::Module& module);

  // Whether to stop now, agreed by every rank: the host's stop request reaches the ranks at
  // slightly different moments, and a rank that stopped alone would leave the others waiting.
  bool should_stop(const mlh::RunContext& ctx);

  uint64_t seed_for_rank(uint64_t seed) const;  // mlh::rt::seed_for_rank(seed, rank())

 private:
  struct Group;
  std::unique_ptr<Group> group_;
  int rank_ = 0, world_size_ = 1, local_rank_ = 0;
  std::chrono::milliseconds timeout_{300000};
  std::string store_ = "none";
  // Where collectives run: the rank's GPU under NCCL (it carries no CPU tensors), else the
  // CPU. Tensors elsewhere are copied there and back.
  c10::Device comm_device_{c10::DeviceType::CPU};
};

}  // namespace mlh::rt
