// How the ranks of a run are laid out. Three ways in, as torchrun users expect:
//   - this host starts them: --nproc-per-node N (and --nnodes/--node-rank/--master-addr for
//     several machines, each running host with the same options);
//   - another launcher started this process as one rank: torchrun's environment (RANK,
//     WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) or SLURM's (SLURM_PROCID,
//     SLURM_NTASKS, SLURM_LOCALID, with the job's first node as master);
//   - neither: one process, as before.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "probe/device.hpp"
#include "probe/ranking.hpp"

namespace mlhost {

struct Launch {
  std::string source = "single process";  // "--nproc-per-node", "torchrun environment", "SLURM environment"
  int world_size = 1;
  int nnodes = 1;
  int local_processes = 1;  // ranks sharing this machine (they share its CPU cores)
  int workers_here = 1;     // workers this host process starts (1 when another launcher started it)
  int first_rank = 0;       // global rank of its first worker
  int first_local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int timeout_s = 300;

  bool distributed() const { return world_size > 1; }
  // Started by torchrun or SLURM: this process is one rank, and rank 0's host owns the run folder.
  bool external() const { return source != "single process" && source != "--nproc-per-node"; }
};

using EnvLookup = std::function<const char*(const char*)>;

// From the command line, else the environment. Throws CliError naming the option or
// variable that is malformed or contradicts another.
Launch resolve_launch(const CliOptions& options, const EnvLookup& env);

// The devices of this machine's ranks, in local-rank order from first_local_rank: every rank
// shares a CPU; GPUs go one per rank, in index order among the chosen device's plugin and
// kind. Throws HostError (exit 2) when the device cannot take part in distributed training
// (MPS) or there are fewer GPUs than ranks.
std::vector<Device> devices_for_ranks(const Launch& launch, const Device& chosen, const Ranking& ranking);

// Puts the layout into the plan ("distributed": world size, backend, rendezvous, global
// batch) and gives each of the ranks sharing a CPU its share of the cores.
void plan_for_launch(nlohmann::json& plan, const Launch& launch, const Device& chosen);

// The first host of a SLURM node list: "node[07-09,12],gpu1" -> "node07".
std::string first_slurm_host(const std::string& nodelist);

// A TCP port on 127.0.0.1 that nothing listens on right now.
int free_loopback_port();

}  // namespace mlhost
