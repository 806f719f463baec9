// hang: probe never returns (sleeps in a loop). The host's per-plugin timeout must end it.
#include <mlh/plugin.hpp>

#include <unistd.h>

class HangDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    for (;;) sleep(1);
  }
};

MLH_DEVICE_PLUGIN(HangDevices)
