#include "mps_telemetry.hpp"

#ifdef __APPLE__
#include <libproc.h>
#include <sys/resource.h>

#include <cerrno>
#include <climits>
#include <cstring>
#endif

#include <mlh/plugin.hpp>
#include <string>

namespace mlh::mps {

#ifdef __APPLE__

int64_t process_footprint_bytes(int64_t pid) {
  const std::string no_process = "no process " + std::to_string(pid);
  if (pid <= 0 || pid > INT_MAX) throw Error(MLH_ERR_INVALID_ARGUMENT, no_process);
  // V1 is the oldest layout with ri_phys_footprint (macOS 10.9); the kernel fills exactly
  // the layout asked for.
  rusage_info_v1 usage{};
  if (::proc_pid_rusage(static_cast<int>(pid), RUSAGE_INFO_V1, reinterpret_cast<rusage_info_t*>(&usage)) != 0) {
    if (errno == ESRCH) throw Error(MLH_ERR_INVALID_ARGUMENT, no_process);
    throw Error(MLH_ERR_UNAVAILABLE, "cannot read the memory of process " + std::to_string(pid) + ": " +
                                         std::strerror(errno));
  }
  return static_cast<int64_t>(usage.ri_phys_footprint);
}

#else

int64_t process_footprint_bytes(int64_t /*pid*/) {
  throw Error(MLH_ERR_UNSUPPORTED, "the mps plugin reports telemetry only on macOS");
}

#endif

}  // namespace mlh::mps
