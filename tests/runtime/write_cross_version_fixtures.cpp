// Writes this build's cross-version fixtures (see cross_version_fixture.hpp) into a folder:
//   training-state-torch-<major>.<minor>.ckpt    a CheckpointManager file
//   weights-torch-<major>.<minor>.safetensors    export_module_weights()
// Run once per LibTorch build when the checkpoint format or a LibTorch version changes:
//   build/bin/mlhost-write-cross-version-fixtures tests/runtime/fixtures          (LibTorch 2.x)
//   build-debian/bin/mlhost-write-cross-version-fixtures tests/runtime/fixtures   (1.13)
#include <torch/version.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <mlh/runtime/safetensors.hpp>

#include "cross_version_fixture.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const std::string version = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR);
  try {
    mlh::test::CompatNet net;
    mlh::test::set_fixture_weights(net);
    mlh::test::FixtureOptimizers optimizers(net);
    optimizers.steps(net, mlh::test::kFixtureSteps);

    mlh::rt::TrainingState state;
    state.add("net", *net).add("adam", optimizers.adam).add("adamw", optimizers.adamw);
    state.tensors = mlh::test::fixture_tensors();
    state.values = mlh::test::fixture_values();
    const fs::path run = fs::temp_directory_path() / ("mlh-fixture-" + std::to_string(::getpid()));
    const std::string written = mlh::rt::CheckpointManager(run.string()).save(state, mlh::test::kFixtureStep);
    fs::create_directories(out);
    fs::copy_file(written, out / ("training-state-torch-" + version + ".ckpt"), fs::copy_options::overwrite_existing);
    fs::remove_all(run);
    mlh::rt::export_module_weights(*net, (out / ("weights-torch-" + version + ".safetensors")).string(),
                                   {{"format", "pt"}, {"written_by", "LibTorch " + version}});
    std::printf("wrote the LibTorch %s fixtures into %s\n", version.c_str(), out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
