// The environment variables the host sets in every worker, whatever its device: the worker's
// CPU side (OpenMP, MKL and OpenBLAS threads, the inter-op threads, OpenMP binding and wait
// policy, the memory allocator's LD_PRELOAD, MALLOC_CONF and GLIBC_TUNABLES), from the plan.
// A device plugin's prepare() returns only its own device's variables: one of these that it
// returns as well is not used, and the plan warns where its value differs.
#ifndef MLH_HOST_OWNED_ENV_HPP
#define MLH_HOST_OWNED_ENV_HPP

#include <string>
#include <vector>

namespace mlh {

inline const std::vector<std::string>& host_owned_variables() {
  static const std::vector<std::string> names = {
      "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MLH_INTEROP_THREADS", "OMP_PROC_BIND",
      "OMP_WAIT_POLICY", "LD_PRELOAD",      "MALLOC_CONF",          "GLIBC_TUNABLES"};
  return names;
}

inline bool is_host_owned_variable(const std::string& name) {
  for (const std::string& n : host_owned_variables())
    if (n == name) return true;
  return false;
}

}  // namespace mlh

#endif  // MLH_HOST_OWNED_ENV_HPP
