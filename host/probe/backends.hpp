// A device is only usable if the LibTorch the algorithms run on can drive it: a CUDA GPU
// needs an algorithm plugin whose LibTorch has CUDA, an Apple GPU one with MPS (built on
// macOS), an xpu device one with XPU. The device plugins cannot know this; the host reads it
// from the algorithms' manifests (build.torch.backends).
#pragma once

#include <string>
#include <vector>

#include "plugins/manifest.hpp"
#include "probe/probe.hpp"

namespace mlhost {

// Marks the available accelerators of `probes` that run on a LibTorch backend of the trait
// table (mlh/device_traits.hpp) which no manifest in `algorithms` has unavailable, with the
// reason; the CPU runs every plugin.
// With no algorithms at all nothing can be judged, and nothing changes.
void require_torch_backends(std::vector<PluginProbe>& probes, const std::vector<PluginManifest>& algorithms);

// "cpu, cuda": the device types a plugin's LibTorch runs, as its manifest says.
std::string torch_backend_list(const PluginManifest& m);

}  // namespace mlhost
