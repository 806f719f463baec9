// The ranks' layout in the plan: which device each of this machine's ranks takes, the
// "distributed" section (world size, backend, rendezvous, global batch), and each CPU rank's
// share of the cores. A step of plan_run().
#pragma once

#include <vector>

#include "plan/plan_writer.hpp"
#include "plan/plan_types.hpp"

namespace mlhost {

// The devices of this machine's ranks, in local-rank order from first_local_rank: every rank
// shares a CPU; GPUs go one per rank, in index order among the chosen device's plugin and
// kind. Throws PlanError when the device cannot take part in distributed training (MPS) or
// there are fewer GPUs than ranks.
std::vector<Device> devices_for_ranks(const Launch& launch, const Device& chosen, const Ranking& ranking);

// Writes the "distributed" section and divides the threads among the ranks sharing a CPU.
void plan_launch_layout(PlanWriter& plan, const Launch& launch, const Device& chosen);

}  // namespace mlhost
