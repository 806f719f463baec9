// Checkpoints: everything a run needs to resume exactly, written so that a crash at any
// moment loses nothing already written, checked on load, and loadable onto another device.
//
// A TrainingState names the caller's live objects; saving reads them and loading writes into
// them. Its archive (a LibTorch OutputArchive) holds:
//   "format"     1
//   "values"     the JSON object as a string (step, epoch, LR schedule position, grad scaler
//                state, algorithm state: small values)
//   "tensors"    Dict[str, Tensor]: the extra tensors (RNG states), any key allowed
//   "modules"    one sub-archive per module (nn::Module::save)
//   "optimizers" one sub-archive per optimizer (Optimizer::save: Adam, AdamW, SGD... state)
//
// CheckpointManager keeps them in <run_dir>/checkpoints/ as step-000000123.ckpt files:
//   offset 0   "MLHCKPT1"
//          8   u64 little-endian: payload length (file size - 40)
//         16   i64 little-endian: step
//         24   f64 little-endian: metric, NaN when none
//         32   u32: 0 (reserved)
//         36   u32 little-endian: CRC32C of the payload followed by bytes [0, 36)
//         40   payload: the archive above
// best.ckpt is the best one by metric (a hard link, or a copy where links are not possible),
// so pruning step files never removes it. One process writes a run folder at a time.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <mlh/atomic_file.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace mlh::rt {

class Distributed;

// Module and optimizer names are archive keys: letters, digits and '_', not starting with
// a digit. Other names are an mlh::Error(MLH_ERR_INVALID_ARGUMENT).
struct TrainingState {
  std::map<std::string, torch::nn::Module*> modules;        // loaded in place
  std::map<std::string, torch::optim::Optimizer*> optimizers;  // loaded in place
  std::map<std::string, at::Tensor> tensors;                // replaced by the loaded ones
  nlohmann::json values = nlohmann::json::object();         // replaced by the loaded one

  TrainingState& add(const std::string& name, torch::nn::Module& module);
  TrainingState& add(const std::string& name, torch::optim::Optimizer& optimizer);
};

// The archive alone, to any stream. Loading maps every tensor onto `device` (a checkpoint
// written on CUDA loads on CPU); a module's parameters move there too. A checkpoint that does
// not fit the state (a missing module, a parameter of another shape, an optimizer over other
// parameters) is an mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming what differs.
void save_training_state(const TrainingState& state, std::ostream& out);
void load_training_state(TrainingState& state, std::istream& in, at::Device device);

// The parameters and buffers of one module of a checkpoint file, by dotted name, on the CPU
// (for warm starts: warm_start.hpp). A file that cannot be read, does not verify (the
// loaders' checks) or lacks the module is an mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming it.
std::map<std::string, at::Tensor> read_checkpoint_module(const std::string& path, const std::string& module);

enum class Goal { Minimize, Maximize };  // which metric is better

struct LoadedCheckpoint {
  int64_t step = 0;
  std::optional<double> metric;
  nlohmann::json values;  // the same as the state's values after loading
  std::string path;
};

using WarningFn = std::function<void(const std::string&)>;

class CheckpointManager {
 public:
  // `warn` receives each skipped file with its reason (e.g. [&](auto& m) { ctx.warn(m); });
  // without one, warnings go to stderr.
  explicit CheckpointManager(const std::string& run_dir, int keep_last = 3, Goal goal = Goal::Minimize,
                             WarningFn warn = nullptr);

  // Writes checkpoints/step-<step, 9 digits>.ckpt and returns its path; when `metric` is
  // better than best.ckpt's (or there is none), it becomes best.ckpt. Then removes all but
  // the newest `keep_last` step files. A failing write throws mlh::Error(MLH_ERR_IO) naming
  // the path and leaves every earlier checkpoint as it was.
  std::string save(const TrainingState& state, int64_t step, std::optional<double> metric = std::nullopt);

  // In a distributed run: save() writes on rank 0 alone and returns on every rank once the
  // file is complete (all ranks call it at the same step). Loading reads on every rank.
  void share_with(Distributed& dist) { dist_ = &dist; }

  // Loads the newest step file that verifies; each corrupt, truncated or unreadable one is
  // reported through `warn` and skipped (and with `skipped`, listed there as "path: why").
  // Empty when none loads. One that verifies but does not fit the state throws (see
  // load_training_state): an older one would not fit either.
  std::optional<LoadedCheckpoint> load_latest(TrainingState& state, at::Device device,
                                              std::vector<std::string>* skipped = nullptr);
  // Loads best.ckpt, or if it does not verify, the best step file with a metric.
  std::optional<LoadedCheckpoint> load_best(TrainingState& state, at::Device device);

  // Renames the step files the last load skipped as unusable to "<file>.damaged", which no
  // load reads, so that later commands do not try and warn about them again; returns one
  // line per file ("'a' moved aside to 'a.damaged'", or why it could not be). Rank 0 only.
  std::vector<std::string> set_aside_unusable();

  std::vector<std::string> step_files() const;  // newest first
  const std::string& dir() const { return dir_; }
  std::string best_path() const;

 private:
  std::optional<LoadedCheckpoint> load_first(const std::vector<std::string>& paths, TrainingState& state,
                                             at::Device device, std::vector<std::string>* skipped = nullptr);
  // write_file, its I/O errors told with the disk's free space and that the run resumes.
  std::string write(const TrainingState& state, int64_t step, std::optional<double> metric);
  std::string write_file(const TrainingState& state, int64_t step, std::optional<double> metric);
  void update_best(const std::string& path, double metric);
  void prune();
  void remove_abandoned_temp_files();
  void warn(const std::string& message) const;

  std::string dir_;
  int keep_last_;
  Goal goal_;
  WarningFn warn_;
  Distributed* dist_ = nullptr;
  std::vector<std::string> unusable_;  // the step files the last load skipped
};

}  // namespace mlh::rt
