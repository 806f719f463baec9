// The LibTorch version the runtime was built against, for logs and run summaries.
#include <string>

#include <mlh/runtime/compat.hpp>
#include <mlh/runtime/version.hpp>

namespace mlh::rt {

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace mlh::rt
