// The Gloo process group, kept in a file of its own: the one part of the runtime that needs
// Gloo's headers, which PyTorch's wheels do not ship. Whether it was compiled with them is the
// build's choice (MLH_GLOO, sdk/runtime/CMakeLists.txt), recorded in every algorithm plugin's
// manifest so that the host refuses a run that needs Gloo before it starts (docs/install.md).
#pragma once

#include <chrono>
#include <string>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "mlh/runtime/compat.hpp"

namespace mlh::rt::detail {

// The class both Gloo and NCCL groups derive from: ProcessGroup before 2.0, Backend since.
#if MLH_TORCH_VERSION_AT_LEAST(2, 0)
using CommBackend = c10d::Backend;
#else
using CommBackend = c10d::ProcessGroup;
#endif

// The Debian package whose headers a build with Gloo needs.
inline constexpr const char* kGlooPackage = "libgloo-dev";

// A Gloo group of `world_size` ranks meeting through `store`. Ranks whose master is on this
// machine talk over loopback; others over GLOO_SOCKET_IFNAME's interface, else the host
// name's. Throws mlh::Error (MLH_ERR_UNSUPPORTED, naming kGlooPackage) in a build without Gloo.
c10::intrusive_ptr<CommBackend> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                int world_size, std::chrono::milliseconds timeout,
                                                const std::string& master_addr);

}  // namespace mlh::rt::detail
