#include "cli/launch_options.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>


namespace mlhost {

namespace {

// The variable `name` as an integer in [min, max]; `fallback` when unset.
int env_int(const EnvLookup& env, const char* name, int fallback, int min, int max) {
  const char* v = env(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < min || n > max)
    throw CliError(std::string("environment variable ") + name + "='" + v + "' is not an integer from " +
                   std::to_string(min) + " to " + std::to_string(max));
  return static_cast<int>(n);
}

bool is_set(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v && *v;
}

Launch from_torchrun(const CliOptions& o, const EnvLookup& env) {
  Launch l;
  l.source = "torchrun environment";
  l.world_size = env_int(env, "WORLD_SIZE", 0, 1, 1 << 20);
  l.first_rank = env_int(env, "RANK", 0, 0, l.world_size - 1);
  l.first_local_rank = env_int(env, "LOCAL_RANK", 0, 0, l.world_size - 1);
  l.local_processes = env_int(env, "LOCAL_WORLD_SIZE", 1, 1, l.world_size);
  l.nnodes = std::max(1, l.world_size / l.local_processes);
  if (!is_set(env, "MASTER_ADDR")) throw CliError("torchrun environment: RANK is set but MASTER_ADDR is not");
  if (!is_set(env, "MASTER_PORT")) throw CliError("torchrun environment: RANK is set but MASTER_PORT is not");
  l.master_addr = env("MASTER_ADDR");
  l.master_port = env_int(env, "MASTER_PORT", 0, 1, 65535);
  l.timeout_s = o.dist_timeout_s;
  return l;
}

Launch from_slurm(const CliOptions& o, const EnvLookup& env) {
  Launch l;
  l.source = "SLURM environment";
  l.world_size = env_int(env, "SLURM_NTASKS", 1, 1, 1 << 20);
  l.first_rank = env_int(env, "SLURM_PROCID", 0, 0, l.world_size - 1);
  l.first_local_rank = env_int(env, "SLURM_LOCALID", 0, 0, l.world_size - 1);
  l.nnodes = env_int(env, "SLURM_NNODES", 1, 1, l.world_size);
  l.local_processes = std::max(1, l.world_size / l.nnodes);
  if (is_set(env, "MASTER_ADDR")) {
    l.master_addr = env("MASTER_ADDR");
  } else {
    const char* list = is_set(env, "SLURM_JOB_NODELIST") ? env("SLURM_JOB_NODELIST") : env("SLURM_NODELIST");
    if (!list || !*list) throw CliError("SLURM environment: neither MASTER_ADDR nor SLURM_JOB_NODELIST is set");
    l.master_addr = first_slurm_host(list);
    if (l.master_addr.empty())
      throw CliError(std::string("SLURM environment: cannot read the first node of SLURM_JOB_NODELIST='") + list + "'");
  }
  l.master_port = env_int(env, "MASTER_PORT", 29500, 1, 65535);
  l.timeout_s = o.dist_timeout_s;
  return l;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry ends at a comma outside brackets; "prefix[a-b,c]" expands to prefix + a.
  std::string first;
  int depth = 0;
  for (char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  const size_t open = first.find('[');
  if (open == std::string::npos) return first;
  const size_t close = first.find(']', open);
  if (close == std::string::npos) return "";
  std::string range = first.substr(open + 1, close - open - 1);
  range = range.substr(0, range.find_first_of(",-"));  // "07-09,12" -> "07" (zero padding kept)
  if (range.empty()) return "";
  return first.substr(0, open) + range + first.substr(close + 1);
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw CliError(std::string("cannot pick a port for the ranks to meet: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  if (port == 0) throw CliError("cannot pick a free port on 127.0.0.1 for the ranks to meet; pass --master-port");
  return port;
}

Launch resolve_launch(const CliOptions& o, const EnvLookup& env) {
  const bool cli = o.nproc_per_node > 0 || o.nnodes > 0;
  const bool torchrun = is_set(env, "RANK") || is_set(env, "WORLD_SIZE");
  const bool slurm = !torchrun && env_int(env, "SLURM_NTASKS", 1, 1, 1 << 20) > 1 && is_set(env, "SLURM_PROCID");
  if (cli && torchrun)
    throw CliError("--nproc-per-node/--nnodes and a torchrun environment (RANK, WORLD_SIZE) cannot be used together: "
                   "either host starts the ranks or the launcher does");
  if (torchrun) {
    if (!is_set(env, "RANK") || !is_set(env, "WORLD_SIZE"))
      throw CliError("torchrun environment: RANK and WORLD_SIZE must both be set");
    return from_torchrun(o, env);
  }
  if (slurm && !cli) return from_slurm(o, env);

  Launch l;
  l.timeout_s = o.dist_timeout_s;
  if (!cli) return l;
  l.source = "--nproc-per-node";
  l.nnodes = std::max(o.nnodes, 1);
  l.workers_here = l.local_processes = std::max(o.nproc_per_node, 1);
  l.world_size = l.nnodes * l.workers_here;
  l.first_rank = std::max(o.node_rank, 0) * l.workers_here;
  if (l.nnodes > 1) {
    l.master_addr = o.master_addr;
    l.master_port = o.master_port > 0 ? o.master_port : 29500;
  } else {
    if (!o.master_addr.empty()) l.master_addr = o.master_addr;
    l.master_port = o.master_port > 0 ? o.master_port : (l.world_size > 1 ? free_loopback_port() : 29500);
  }
  return l;
}

}  // namespace mlhost
