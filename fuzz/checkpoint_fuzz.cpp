// Checkpoint files (MLHCKPT1 header, payload size, CRC-32C, then the LibTorch archive):
// the input is a run's only step file, loaded by CheckpointManager::load_latest (which
// verifies the header and checksum before LibTorch reads the payload) and load_best (which
// peeks at headers for their metric). An unusable file is skipped with a warning.
#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "fuzz_util.hpp"
#include "mlh/runtime/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string run = [] {
    const std::string dir = mlhfuzz::temp_dir() + "/run";
    std::system(("mkdir -p '" + dir + "/checkpoints'").c_str());
    return dir;
  }();
  mlhfuzz::write_file(run + "/checkpoints/step-000000007.ckpt", data, size);
  mlh::rt::CheckpointManager manager(run, 3, mlh::rt::Goal::Minimize, [](const std::string&) {});
  try {
    mlh::rt::TrainingState state;
    (void)manager.load_latest(state, torch::kCPU);
    mlh::rt::TrainingState best;
    (void)manager.load_best(best, torch::kCPU);
  } catch (const mlh::Error&) {
  }
  return 0;
}
