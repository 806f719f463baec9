// crash: probe dereferences a null pointer (SIGSEGV). The helper's guard cannot catch a
// signal, so the probing process dies; the host must report it and carry on.
#include <mlh/plugin.hpp>

namespace {
// volatile: the compiler cannot prove the pointer null and replace the store with a trap.
int* volatile g_nowhere = nullptr;
}  // namespace

class CrashDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    *g_nowhere = 42;  // SIGSEGV
    return {};
  }
};

MLH_DEVICE_PLUGIN(CrashDevices)
