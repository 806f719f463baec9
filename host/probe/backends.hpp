// A GPU is only usable if the LibTorch the algorithms run on can drive it: CUDA devices
// need an algorithm plugin built against a CUDA LibTorch, MPS devices one built on macOS.
// The device plugins cannot know this; the host reads it from the algorithms' manifests.
#pragma once

#include <vector>

#include "plugins/manifest.hpp"
#include "probe/probe.hpp"

namespace mlhost {

// Marks the available cuda/mps devices of `probes` unavailable, with the reason, when no
// manifest in `algorithms` has the LibTorch backend they need. With no algorithms at all
// nothing can be judged, and nothing changes.
void require_torch_backends(std::vector<PluginProbe>& probes, const std::vector<PluginManifest>& algorithms);

}  // namespace mlhost
