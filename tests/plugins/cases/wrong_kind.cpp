// wrong-kind: the manifest says kind "device" but the library is an algorithm plugin:
// negotiate answers MLH_PLUGIN_KIND_ALGORITHM with an mlh_algorithm_plugin table. A host
// that trusted the manifest would call an algorithm table as a device table.
#include <mlh/plugin.hpp>

class NotADevice : public mlh::AlgorithmPlugin {
 public:
  mlh::AlgorithmDescription describe() override {
    mlh::AlgorithmDescription d;
    d.summary = "an algorithm plugin whose manifest claims it is a device plugin";
    d.commands = {"train"};
    return d;
  }
  void run(mlh::RunContext&) override { throw mlh::Error(MLH_ERR_UNSUPPORTED, "wrong-kind test plugin"); }
};

MLH_ALGORITHM_PLUGIN(NotADevice)
