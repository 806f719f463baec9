// The ranks' layout in the plan: which device each of this machine's ranks takes, the
// "distributed" section (world size, backend, rendezvous, global batch), and each CPU rank's
// share of the cores. A step of plan_run().
#pragma once

#include <vector>

#include "plan/plan_types.hpp"
#include "plan/plan_writer.hpp"
#include "plugins/manifest.hpp"

namespace mlhost {

// The devices of this machine's ranks, in local-rank order from first_local_rank: every rank
// shares a CPU; GPUs go one per rank, in index order among the chosen device's plugin and
// kind. Throws PlanError when the device cannot take part in distributed training (MPS) or
// there are fewer GPUs than ranks.
std::vector<Device> devices_for_ranks(const Launch& launch, const Device& chosen, const Ranking& ranking);

// The c10d backend the ranks on `chosen` talk through: NCCL for CUDA, Gloo for the CPU.
std::string distributed_backend(const Device& chosen);

// Throws PlanError, before anything is measured or written, when the ranks of a distributed
// launch would talk through a backend the algorithm's plugin was built without (its
// manifest's build.torch.distributed: a runtime built where Gloo's headers were missing),
// naming what to install. A manifest that does not say refuses nothing.
void check_distributed_backend(const Launch& launch, const Device& chosen, const PluginManifest& algorithm);

// Writes the "distributed" section, divides the threads among the ranks sharing a CPU and
// unbinds their threads (below).
void plan_launch_layout(PlanWriter& plan, const Launch& launch, const Device& chosen);

// With more than one rank on this machine, an omp_proc_bind that binds (true, close, spread,
// master) becomes null, its source and a plan warning saying why: OpenMP would bind every
// rank's threads to the same first cores.
void unbind_ranks_sharing_this_machine(PlanWriter& plan, const Launch& launch);

}  // namespace mlhost
