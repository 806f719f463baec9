#include "plan/launch_layout.hpp"

#include <algorithm>

#include "probe/torch_backend.hpp"

namespace mlhost {

using mlh::PlanField;
using nlohmann::json;

std::vector<Device> devices_for_ranks(const Launch& launch, const Device& chosen, const Ranking& ranking) {
  const int here = launch.workers_here;
  if (!launch.distributed()) return {chosen};
  if (chosen.limitations & MLH_LIMIT_NO_DISTRIBUTED)
    throw PlanError("device " + chosen.id() + " (" + chosen.name + ") cannot take part in distributed training: its " +
                    chosen.plugin + " plugin reports no_distributed (neither Gloo nor NCCL carries its tensors); "
                    "run one process, or --device cpu");
  // Ranks on the host's CPU share it; an accelerator's ranks take one device each.
  if (!torch_backend(chosen).accelerator) return std::vector<Device>(static_cast<size_t>(here), chosen);
  std::vector<Device> gpus;
  for (const RankedDevice& r : ranking.devices)
    if (r.device.available && r.device.plugin == chosen.plugin && r.device.kind == chosen.kind) gpus.push_back(r.device);
  std::sort(gpus.begin(), gpus.end(), [](const Device& a, const Device& b) { return a.index < b.index; });
  const int needed = launch.first_local_rank + here;
  if (static_cast<int>(gpus.size()) < needed)
    throw PlanError(std::to_string(launch.local_processes) + " ranks on this machine need " +
                    std::to_string(launch.local_processes) + " " + chosen.kind + " devices, one each; it has " +
                    std::to_string(gpus.size()) + " (see 'host --probe')");
  return std::vector<Device>(gpus.begin() + launch.first_local_rank, gpus.begin() + needed);
}

std::string distributed_backend(const Device& chosen) {
  const TorchBackend& backend = torch_backend(chosen);
  return backend.distributed ? backend.distributed : "gloo";
}

void check_distributed_backend(const Launch& launch, const Device& chosen, const PluginManifest& algorithm) {
  if (!launch.distributed() || !algorithm.torch_distributed) return;
  const std::string backend = distributed_backend(chosen);
  const std::vector<std::string>& built = *algorithm.torch_distributed;
  if (std::find(built.begin(), built.end(), backend) != built.end()) return;
  const std::string what = std::to_string(launch.world_size) + " ranks on " + chosen.id() + " talk through " +
                           (backend == "gloo" ? std::string("Gloo") : std::string("NCCL")) + ", which the " +
                           algorithm.name + " plugin was built without (" + algorithm.manifest_path.string() +
                           ": build.torch.distributed is " + nlohmann::json(built).dump() + ")";
  if (backend == "gloo")
    throw PlanError(what + ": Gloo's headers were missing when it was built. Install them (apt-get install "
                    "libgloo-dev; bash scripts/setup.sh does), build again (bash scripts/build.sh), or run one "
                    "process");
  throw PlanError(what + ": build it against a CUDA LibTorch with NCCL's headers (bash scripts/build.sh --cuda), "
                  "or run one process");
}

void plan_launch_layout(PlanWriter& plan, const Launch& launch, const Device& chosen) {
  if (!launch.distributed()) return;
  const TorchBackend& backend = torch_backend(chosen);
  const bool cpu = !backend.accelerator;
  json d = {{"source", launch.source},
            {"world_size", launch.world_size},
            {"nnodes", launch.nnodes},
            {"ranks_per_node", launch.local_processes},
            {"first_rank", launch.first_rank},
            {"backend", distributed_backend(chosen)},
            {"master", launch.master_addr + ":" + std::to_string(launch.master_port)},
            {"timeout_s", launch.timeout_s},
            {"global_batch_size", nullptr}};
  const json& batch = plan.value(PlanField::kBatchSize);
  if (batch.is_number_integer()) d["global_batch_size"] = batch.get<int64_t>() * launch.world_size;
  plan.set(PlanField::kDistributed, d, Source{SourceKind::kLaunch, launch.source + "; batch size is per rank"});
  // Ranks sharing the CPU split its cores; more threads than cores would slow every rank.
  json threads = plan.value(PlanField::kThreads);
  if (cpu && launch.local_processes > 1 && threads["intra_op"].is_number_integer()) {
    threads["intra_op"] = std::max<int64_t>(1, threads["intra_op"].get<int64_t>() / launch.local_processes);
    Source source = plan.source(PlanField::kThreads);
    source.text += "; divided among " + std::to_string(launch.local_processes) + " ranks on this machine";
    plan.set(PlanField::kThreads, threads, source);
  }
  unbind_ranks_sharing_this_machine(plan, launch);
}

void unbind_ranks_sharing_this_machine(PlanWriter& plan, const Launch& launch) {
  // OpenMP places every process's threads from the machine's first core on, so bound ranks on
  // one machine would all run there (two ranks of one thread on 2 cores: both on core 0, their
  // Gloo threads too). Their threads are left to the scheduler instead.
  const json bind = plan.value(PlanField::kOmpProcBind);
  if (launch.local_processes < 2 || !bind.is_string() || bind == "false") return;
  Source source = plan.source(PlanField::kOmpProcBind);
  const std::string why = "not applied: the " + std::to_string(launch.local_processes) +
                          " ranks on this machine would all be bound to its first cores";
  plan.add_warning("omp_proc_bind = " + bind.dump() + " (" + source.text + ") " + why);
  source.text += "; " + bind.get<std::string>() + " " + why;
  plan.set(PlanField::kOmpProcBind, nullptr, source);
}

}  // namespace mlhost
