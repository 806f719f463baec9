#include "plan.hpp"

#include <unistd.h>

namespace mlhost {

nlohmann::json make_plan(const Device& device) {
  nlohmann::json reasons = nlohmann::json::object();
  int intra = device.recommended_threads;
  if (intra > 0) {
    reasons["threads"] = "recommended by the " + device.plugin + " plugin";
  } else {
    intra = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    if (intra < 1) intra = 1;
    reasons["threads"] = "the plugin recommends none: all online CPUs";
  }
  // Inter-op parallelism only helps graphs with independent branches; training loops
  // here are sequential, and extra pools compete with intra-op threads on small machines.
  const int inter = 1;
  reasons["precision"] = "fp32 until automatic precision selection is configured";
  return {{"device", device.id()},
          {"torch_device", device.torch_device},
          {"device_class", device_class_name(device.device_class)},
          {"precision", "fp32"},
          {"threads", {{"intra_op", intra}, {"inter_op", inter}}},
          {"reasons", reasons}};
}

}  // namespace mlhost
