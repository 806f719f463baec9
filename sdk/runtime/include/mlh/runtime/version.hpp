// The LibTorch version the runtime was built against.
#pragma once

#include <string>

namespace mlh::rt {

std::string torch_version();  // "1.13.1"

}  // namespace mlh::rt
