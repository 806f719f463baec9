// dataset.json: trm::parse_dataset_json; what parses must serialise (to_json) and parse back
// to the same document.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <mlh/plugin.hpp>

#include "data/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  trm::DatasetMetadata m;
  try {
    m = trm::parse_dataset_json(text, "fuzz/dataset.json");
  } catch (const mlh::Error&) {
    return 0;
  }
  const nlohmann::json once = trm::to_json(m);
  const nlohmann::json twice = trm::to_json(trm::parse_dataset_json(once.dump(), "fuzz/dataset.json (serialised)"));
  if (once != twice) {
    std::fprintf(stderr, "to_json/parse round trip differs:\n%s\n---\n%s\n", once.dump().c_str(), twice.dump().c_str());
    std::abort();
  }
  return 0;
}
