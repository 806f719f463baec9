// slow-good ("slowgood"): a correct device plugin whose probe takes 300 ms, then reports one
// CPU-class device. For testing that probe timeouts are per plugin and probes run in parallel.
#include "simple_device.hpp"

#include <chrono>
#include <thread>

class SlowGoodDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return {mlh::testing::simple_device("slowgood", "slow good cpu")};
  }
};

MLH_DEVICE_PLUGIN(SlowGoodDevices)
