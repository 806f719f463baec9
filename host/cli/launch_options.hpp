// How the ranks of a run are laid out, from the command line or a launcher's environment,
// as torchrun users expect:
//   - this host starts them: --nproc-per-node N (and --nnodes/--node-rank/--master-addr for
//     several machines, each running host with the same options);
//   - another launcher started this process as one rank: torchrun's environment (RANK,
//     WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) or SLURM's (SLURM_PROCID,
//     SLURM_NTASKS, SLURM_LOCALID, with the job's first node as master);
//   - neither: one process.
#pragma once

#include <functional>
#include <string>

#include "cli/cli.hpp"
#include "plan/planner.hpp"

namespace mlhost {

using EnvLookup = std::function<const char*(const char*)>;

// From the command line, else the environment. Throws CliError naming the option or
// variable that is malformed or contradicts another.
Launch resolve_launch(const CliOptions& options, const EnvLookup& env);

// The first host of a SLURM node list: "node[07-09,12],gpu1" -> "node07".
std::string first_slurm_host(const std::string& nodelist);

// A TCP port on 127.0.0.1 that nothing listens on right now.
int free_loopback_port();

}  // namespace mlhost
