#include "probe/backends.hpp"

#include "probe/torch_backend.hpp"

namespace mlhost {
namespace {

std::string torch_word(const PluginManifest& m) {
  if (!m.torch_version) return m.name + " (no LibTorch)";
  return m.name + " (LibTorch " + *m.torch_version + (m.torch_cuda ? " with CUDA" : " without CUDA") + ")";
}

bool built_for_macos(const PluginManifest& m) {
  return m.torch_version && m.build.value("system", std::string()) == "Darwin";
}

}  // namespace

void require_torch_backends(std::vector<PluginProbe>& probes, const std::vector<PluginManifest>& algorithms) {
  if (algorithms.empty()) return;
  bool cuda = false, mps = false;
  std::string seen;
  for (const auto& a : algorithms) {
    cuda = cuda || (a.torch_version && a.torch_cuda);
    mps = mps || built_for_macos(a);
    seen += (seen.empty() ? "" : ", ") + torch_word(a);
  }
  for (auto& p : probes) {
    for (auto& d : p.devices) {
      if (!d.available) continue;
      const TorchBackend::Needs needs = torch_backend(d).needs;
      if (needs == TorchBackend::Needs::kCuda && !cuda) {
        d.available = false;
        d.unavailable_reason = "no algorithm plugin has a CUDA-enabled LibTorch (" + seen + ")";
      } else if (needs == TorchBackend::Needs::kMacos && !mps) {
        d.available = false;
        d.unavailable_reason = "no algorithm plugin has an MPS-enabled LibTorch (one built on macOS) (" + seen + ")";
      }
    }
  }
}

}  // namespace mlhost
