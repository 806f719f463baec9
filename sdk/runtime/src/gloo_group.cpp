#include "gloo_group.hpp"

#include <cstdlib>

#include <mlh/plugin.hpp>

// MLH_RT_HAS_GLOO comes from the build (sdk/runtime/CMakeLists.txt): 1 where Gloo's headers
// were found (Debian's libgloo-dev beside PyPI's wheel, which links its own Gloo: see
// docs/install.md for why that pairing is sound), 0 where they were not or MLH_GLOO=OFF.
#if MLH_RT_HAS_GLOO
// Gloo is inside libtorch_cpu, but LibTorch's CMake packages do not say so (USE_C10D_GLOO).
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

namespace mlh::rt::detail {

#if MLH_RT_HAS_GLOO

namespace {
bool is_loopback(const std::string& addr) { return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1"; }
}  // namespace

c10::intrusive_ptr<CommBackend> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                int world_size, std::chrono::milliseconds timeout,
                                                const std::string& master_addr) {
  // Every Gloo object is made and destroyed inside libtorch_cpu (the device factories, the
  // group's constructor and destructor); this file holds only pointers to them.
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  else if (is_loopback(master_addr))
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  else
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
}

#else

c10::intrusive_ptr<CommBackend> make_gloo_group(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                std::chrono::milliseconds, const std::string&) {
  throw mlh::Error(MLH_ERR_UNSUPPORTED, std::string("this build of the runtime has no Gloo, which CPU ranks talk "
                                                    "through: install ") +
                                            kGlooPackage + " (apt-get install " + kGlooPackage +
                                            ") and build again");
}

#endif

}  // namespace mlh::rt::detail
