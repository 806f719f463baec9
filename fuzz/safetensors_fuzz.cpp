// safetensors files: load_safetensors validates the 8-byte length and the JSON header
// (dtypes, shapes, offsets tiling the data) before it allocates or reads any tensor.
#include <cstdint>
#include <map>
#include <string>

#include "fuzz_util.hpp"
#include "mlh/plugin.hpp"
#include "mlh/runtime/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = mlhfuzz::temp_dir() + "/model.safetensors";
  mlhfuzz::write_file(path, data, size);
  try {
    std::map<std::string, std::string> metadata;
    (void)mlh::rt::load_safetensors(path, &metadata);
  } catch (const mlh::Error&) {
  }
  return 0;
}
