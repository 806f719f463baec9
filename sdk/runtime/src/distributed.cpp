#include "mlh/runtime/distributed.hpp"

#include <mlh/device_traits.hpp>

#include <cstdlib>
#include <future>
#include <map>
#include <thread>
#include <utility>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <mlh/peer_lost.hpp>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "gloo_group.hpp"
#include "mlh/runtime/compat.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if MLH_RT_HAS_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace mlh::rt {

namespace {

using detail::CommBackend;

int env_int(const char* name, int fallback, int min, int max) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < min || n > max)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string(name) + "='" + v + "': expected an integer from " +
                                                   std::to_string(min) + " to " + std::to_string(max));
  return static_cast<int>(n);
}

}  // namespace

DistributedSettings DistributedSettings::from_context(const mlh::RunContext& ctx) {
  DistributedSettings s;
  s.rank = ctx.rank();
  s.world_size = ctx.world_size() < 1 ? 1 : ctx.world_size();
  s.local_rank = ctx.local_rank();
  if (s.rank < 0 || s.rank >= s.world_size)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "distributed: rank " + std::to_string(s.rank) +
                                                   " is outside a world of " + std::to_string(s.world_size));
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) s.master_addr = addr;
  s.master_port = env_int("MASTER_PORT", s.master_port, 1, 65535);
  s.timeout = std::chrono::seconds(env_int("MLH_DIST_TIMEOUT_S", 300, 1, 86400));
  s.should_stop = [&ctx] { return ctx.should_stop(); };  // used only while constructing the group
  try {
    const nlohmann::json plan = nlohmann::json::parse(ctx.plan_json());
    if (plan.contains("distributed") && plan["distributed"].is_object())
      s.backend = plan["distributed"].value("backend", "");
  } catch (const nlohmann::json::exception&) {
    // A plan without a readable distributed section: the device's backend.
  }
  // As torch.distributed's env:// rendezvous reads it (rendezvous.py, _create_c10d_store).
  if (const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE"); agent && std::string(agent) == "True") {
    s.agent_store = true;
    s.agent_store_prefix = "/worker/attempt_" + std::to_string(env_int("TORCHELASTIC_RESTART_COUNT", 0, 0, 1 << 30));
  }
  return s;
}

std::string communication_backend(const std::string& planned, const std::string& device) {
  const mlh::DeviceTraits& traits = mlh::device_traits(device);
  if (*traits.type && !traits.distributed)
    throw mlh::Error(MLH_ERR_UNSUPPORTED, std::string("distributed training cannot run on ") + traits.name +
                                              ": neither Gloo nor NCCL carries " + traits.name +
                                              " tensors (run on the CPU with --device cpu, or on one process)");
  if (planned.empty()) return traits.distributed ? traits.distributed : "gloo";  // as the host plans it
  if (planned != "gloo" && planned != "nccl")
    throw mlh::Error(MLH_ERR_UNSUPPORTED, "the plan's distributed backend '" + planned +
                                              "' is not one this runtime speaks (gloo, nccl)");
  return planned;
}

struct Distributed::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<CommBackend> comm;
  std::string backend;
};

Distributed::Distributed() = default;
Distributed::~Distributed() = default;

Distributed::Distributed(const mlh::RunContext& ctx, c10::Device device)
    : Distributed(DistributedSettings::from_context(ctx), device) {}

Distributed::Distributed(const DistributedSettings& s, c10::Device device)
    : rank_(s.rank), world_size_(s.world_size), local_rank_(s.local_rank), timeout_(s.timeout) {
  if (world_size_ <= 1 && !s.group_of_one) return;
  const std::string backend = communication_backend(s.backend, device.str());
  // torchrun's agent serves a store at MASTER_PORT that every rank may share
  // (TORCHELASTIC_USE_AGENT_STORE=True: its static rendezvous, --master-port, always does). A
  // LibTorch 1.x client does not speak a 2.x agent's store protocol (it is reset, or hangs),
  // so such ranks meet at a store of their own, served by rank 0 on the next port: every rank
  // derives the same one from the same MASTER_PORT, and the agent holds only its own.
  const bool own_store_beside_agent = s.agent_store && TORCH_VERSION_MAJOR < 2;
  const bool agent_store = s.agent_store && !own_store_beside_agent;
  const int port = own_store_beside_agent ? (s.master_port < 65535 ? s.master_port + 1 : s.master_port - 1)
                                          : s.master_port;
  const std::string where = s.master_addr + ":" + std::to_string(port);
  auto group = std::make_unique<Group>();  // kept only once the group works
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(port);
    // Under torchrun's agent store, a server of our own on its port fails ("Address already in
    // use"): the agent's store is the one every rank meets at.
    options.isServer = rank_ == 0 && !agent_store;
    options.numWorkers = static_cast<std::size_t>(world_size_);
    options.waitWorkers = true;  // clients count themselves in, as torch.distributed's do
    options.timeout = timeout_;
    // Connected on a thread of its own and bounded by the timeout: a LibTorch 1.13 client of the
    // agent's store of torchrun 2.15 hung in TCPStore's constructor long past its own timeout.
    // A thread still stuck there is left behind; the worker ends with the error below.
    std::packaged_task<c10::intrusive_ptr<c10d::TCPStore>()> connect(
        [addr = s.master_addr, options] { return c10::make_intrusive<c10d::TCPStore>(addr, options); });
    std::future<c10::intrusive_ptr<c10d::TCPStore>> connected = connect.get_future();
    std::thread(std::move(connect)).detach();
    // Waited for in slices, so that a stop request ends the wait (the scheduler that sent
    // SIGTERM kills a rank that takes the whole timeout to notice).
    const std::chrono::milliseconds bound = timeout_ + std::chrono::seconds(5);
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (connected.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      if (s.should_stop && s.should_stop())
        throw mlh::Error(MLH_ERR_CANCELLED, "distributed rank " + std::to_string(rank_) + " of " +
                                                std::to_string(world_size_) + ": stopped while waiting at " + where +
                                                " for the other ranks to join");
      if (std::chrono::steady_clock::now() >= deadline)
        throw std::runtime_error("no answer within " + std::to_string(bound.count() / 1000) + " s");
    }
    auto tcp = connected.get();
    if (agent_store)
      group->store = c10::make_intrusive<c10d::PrefixStore>(s.agent_store_prefix, tcp);
    else
      group->store = tcp;
    store_ = agent_store ? "torchrun agent" : own_store_beside_agent ? "rank 0, beside torchrun's agent" : "rank 0";
  } catch (const std::exception& e) {
    if (const auto* stop = dynamic_cast<const mlh::Error*>(&e); stop && stop->code() == MLH_ERR_CANCELLED) throw;
    const std::string agent_hint =
        agent_store ? " (torchrun's agent serves this store, TORCHELASTIC_USE_AGENT_STORE=True)"
        : own_store_beside_agent
            ? " (rank 0's store on the port after torchrun's MASTER_PORT, which torchrun's agent holds: this "
              "LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                  " does not speak the agent's store protocol; is port " + std::to_string(port) + " free on rank 0's "
                  "machine?)"
            : std::string();
    throw mlh::Error(MLH_ERR_UNAVAILABLE, "distributed rank " + std::to_string(rank_) + " of " +
                                              std::to_string(world_size_) + ": rendezvous at " + where +
                                              " failed: " + e.what() + agent_hint);
  }
  try {
#if MLH_RT_HAS_NCCL
    if (backend == "nccl") {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout_;
      group->comm = c10::make_intrusive<c10d::ProcessGroupNCCL>(group->store, rank_, world_size_, options);
      group->backend = "nccl";
      comm_device_ = device;
      group_ = std::move(group);
      return;
    }
#endif
    if (backend == "nccl")
      throw mlh::Error(MLH_ERR_UNSUPPORTED, "the plan's distributed backend is NCCL, which this build of the runtime "
                                            "does not have (LibTorch's NCCL headers were missing)");
    group->comm = detail::make_gloo_group(group->store, rank_, world_size_, timeout_, s.master_addr);
    group->backend = "gloo";
    group_ = std::move(group);
  } catch (const std::exception& e) {
    throw mlh::Error(MLH_ERR_UNAVAILABLE, "distributed rank " + std::to_string(rank_) + " of " +
                                              std::to_string(world_size_) + ": cannot form the process group via " +
                                              where + ": " + e.what());
  }
}

std::string Distributed::backend() const { return group_ ? group_->backend : "none"; }

namespace {

// `t` itself when it is contiguous on `device`, else a contiguous copy there (copied back
// by the callers that write into it).
at::Tensor on_device(const at::Tensor& t, c10::Device device) {
  return t.device() == device && t.is_contiguous() ? t : t.to(device).contiguous();
}

// Runs a collective and waits for it; a failure (a peer that died, a timeout) becomes an
// mlh::Error that says which rank saw it.
template <class Launch>
void run_collective(int rank, int world, const char* what, Launch&& launch) {
  try {
    launch()->wait();
  } catch (const std::exception& e) {
    throw mlh::Error(MLH_ERR_UNAVAILABLE, "distributed rank " + std::to_string(rank) + " of " + std::to_string(world) +
                                              ": " + what + " failed (" + mlh::kPeerLostText + "): " + e.what());
  }
}

}  // namespace

void Distributed::broadcast(std::vector<at::Tensor> tensors) {
  if (!enabled()) return;
  for (at::Tensor& t : tensors) {
    // Collectives work on contiguous tensors: broadcast a contiguous copy, then copy back.
    std::vector<at::Tensor> buffer{on_device(t, comm_device_)};
    run_collective(rank_, world_size_, "broadcast", [&] { return group_->comm->broadcast(buffer); });
    if (!buffer[0].is_same(t)) t.copy_(buffer[0]);
  }
}

void Distributed::broadcast_module(torch::nn::Module& module) {
  if (!enabled()) return;
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> tensors;
  for (const auto& p : module.parameters()) tensors.push_back(p);
  for (const auto& b : module.buffers()) tensors.push_back(b);
  broadcast(std::move(tensors));
}

void Distributed::average_gradients(const std::vector<at::Tensor>& parameters, int64_t bucket_bytes) {
  if (!enabled()) return;
  torch::NoGradGuard no_grad;
  // Buckets of gradients sharing a device and dtype, in parameter order (the same on every rank).
  struct Bucket {
    std::vector<at::Tensor> grads;
    int64_t bytes = 0;
    at::Tensor flat;
    c10::intrusive_ptr<c10d::Work> work;
  };
  std::vector<Bucket> buckets;
  std::map<std::pair<std::string, int>, size_t> open;  // the bucket each (device, dtype) is filling
  for (const at::Tensor& p : parameters) {
    if (!p.requires_grad()) continue;
    at::Tensor& grad = const_cast<at::Tensor&>(p).mutable_grad();
    if (!grad.defined()) grad = at::zeros_like(p);
    const auto key = std::make_pair(grad.device().str(), static_cast<int>(grad.scalar_type()));
    auto it = open.find(key);
    if (it == open.end() || buckets[it->second].bytes >= bucket_bytes) {
      buckets.emplace_back();
      it = open.insert_or_assign(key, buckets.size() - 1).first;
    }
    Bucket& b = buckets[it->second];
    b.grads.push_back(grad);
    b.bytes += grad.numel() * static_cast<int64_t>(grad.element_size());
  }
  // Launch every bucket, then wait: Gloo works through them while the next are flattened.
  for (Bucket& b : buckets) {
    std::vector<at::Tensor> pieces;
    for (const at::Tensor& g : b.grads) pieces.push_back(g.reshape({-1}));
    b.flat = at::cat(pieces).to(comm_device_);
    std::vector<at::Tensor> io{b.flat};
    try {
      b.work = group_->comm->allreduce(io);
    } catch (const std::exception& e) {
      throw mlh::Error(MLH_ERR_UNAVAILABLE, "distributed rank " + std::to_string(rank_) + " of " +
                                                std::to_string(world_size_) + ": gradient all-reduce failed (" +
                                                mlh::kPeerLostText + "): " + e.what());
    }
  }
  const double scale = 1.0 / world_size_;
  for (Bucket& b : buckets) {
    run_collective(rank_, world_size_, "gradient all-reduce", [&] { return b.work; });
    b.flat.mul_(scale);
    int64_t offset = 0;
    for (at::Tensor& g : b.grads) {
      g.copy_(b.flat.narrow(0, offset, g.numel()).view(g.sizes()));
      offset += g.numel();
    }
  }
}

void Distributed::all_reduce_sum(at::Tensor& tensor) {
  if (!enabled()) return;
  std::vector<at::Tensor> io{on_device(tensor, comm_device_)};
  run_collective(rank_, world_size_, "all-reduce", [&] { return group_->comm->allreduce(io); });
  if (!io[0].is_same(tensor)) tensor.copy_(io[0]);
}

void Distributed::all_reduce_mean(at::Tensor& tensor) {
  if (!enabled()) return;
  all_reduce_sum(tensor);
  torch::NoGradGuard no_grad;
  tensor.div_(world_size_);
}

double Distributed::mean(double value) {
  if (!enabled()) return value;
  at::Tensor t = at::full({1}, value, at::TensorOptions().dtype(at::kDouble).device(comm_device_));
  all_reduce_sum(t);
  return t.item<double>() / world_size_;
}

bool Distributed::any(bool value) {
  if (!enabled()) return value;
  at::Tensor t = at::full({1}, value ? 1 : 0, at::TensorOptions().dtype(at::kInt).device(comm_device_));
  all_reduce_sum(t);
  return t.item<int>() > 0;
}

std::vector<at::Tensor> Distributed::all_gather(const at::Tensor& tensor) {
  if (!enabled()) return {tensor};
  std::vector<at::Tensor> input{on_device(tensor, comm_device_)};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < world_size_; ++r) output[0].push_back(at::empty_like(input[0]));
  run_collective(rank_, world_size_, "all-gather", [&] { return group_->comm->allgather(output, input); });
  if (output[0][0].device() != tensor.device())
    for (at::Tensor& t : output[0]) t = t.to(tensor.device());
  return output[0];
}

void Distributed::barrier() {
  if (!enabled()) return;
  // A tiny all-reduce is a barrier that every backend times out the same way.
  any(false);
}

bool Distributed::parameters_agree(torch::nn::Module& module) {
  if (!enabled()) return true;
  torch::NoGradGuard no_grad;
  // Per tensor: the sum and a position-weighted sum, in double on the CPU; any difference in
  // any value changes them (short of a coincidence no training step produces).
  std::vector<at::Tensor> parts;
  auto add = [&](const at::Tensor& t) {
    const at::Tensor v = t.detach().to(at::kCPU, at::kDouble).reshape({-1});
    const at::Tensor weights = at::arange(1, v.numel() + 1, at::kDouble).reciprocal_();
    parts.push_back(at::stack({v.sum(), (v * weights).sum()}));
  };
  for (const auto& p : module.parameters()) add(p);
  for (const auto& b : module.buffers()) add(b);
  if (parts.empty()) return true;
  const at::Tensor mine = at::cat(parts);
  for (const at::Tensor& theirs : all_gather(mine))
    if (!at::equal(theirs, mine)) return false;
  return true;
}

bool Distributed::should_stop(const mlh::RunContext& ctx) { return any(ctx.should_stop()); }

uint64_t seed_for_rank(uint64_t seed, int rank) {
  return rank <= 0 ? seed : seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(rank);
}

uint64_t Distributed::seed_for_rank(uint64_t seed) const { return mlh::rt::seed_for_rank(seed, rank_); }

}  // namespace mlh::rt
