// abort: probe calls abort() (SIGABRT), as a failed assertion in a driver library would.
#include <mlh/plugin.hpp>

#include <cstdlib>

class AbortDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override { std::abort(); }
};

MLH_DEVICE_PLUGIN(AbortDevices)
