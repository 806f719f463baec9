// DEPRECATED: kept so that device plugins written against the SDK of ABI 1.1 (commit 92d6261)
// still compile. Removed no earlier than the SDK's next major version: docs/sdk-changelog.md
// (installed as <prefix>/share/doc/mlhost/docs/sdk-changelog.md) says what to use instead.
//
// The host now chooses the worker's memory allocator and sets its variables (LD_PRELOAD and
// MALLOC_CONF, or GLIBC_TUNABLES) from the plan for every device (docs/plan.md, "allocator"
// and "environment"), and ignores them in what a device plugin's prepare() returns. So
// allocator_environment() returns nothing.
#ifndef MLH_SDK_ALLOCATOR_ENV_HPP
#define MLH_SDK_ALLOCATOR_ENV_HPP

#include <cstdlib>
#include <vector>

#include "plan_reader.hpp"
#include "plugin.hpp"

namespace mlh {

// Returns no variables (see above); the arguments are no longer read.
[[deprecated(
    "mlh::allocator_environment is a no-op: the host sets the worker's allocator variables from the plan for "
    "every device; return only your device's own variables from mlh::DevicePlugin::prepare() instead "
    "(docs/sdk-changelog.md)")]]
inline std::vector<EnvVar> allocator_environment(const PlanReader& /*plan*/,
                                                 const char* /*existing_preload*/ = std::getenv("LD_PRELOAD"),
                                                 const char* /*existing_tunables*/ = std::getenv("GLIBC_TUNABLES")) {
  return {};
}

}  // namespace mlh

#endif  // MLH_SDK_ALLOCATOR_ENV_HPP
