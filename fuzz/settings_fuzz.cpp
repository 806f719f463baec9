// The hardware settings file (INI through Boost.Program_options): parse_hardware_settings,
// what read_hardware_settings uses, then every key looked up for a few device kinds.
#include <cstdint>
#include <string>

#include "plan/hardware_settings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const mlhost::HardwareSettings s = mlhost::parse_hardware_settings(text, "fuzz-hardware.ini");
    for (const auto& key : mlhost::hardware_setting_keys())
      for (const char* kind : {"cpu", "cuda", "mps"}) (void)s.get(key, kind);
  } catch (const mlhost::SettingsError&) {
  }
  return 0;
}
