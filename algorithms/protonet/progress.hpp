// Where a ProtoNet training run stands: what its loop counts and decides by, saved in every
// checkpoint as values["progress"] under the keys checkpoints have always had (epoch,
// episode_in_epoch, episode, best_val_loss, best_val_acc, best_epoch, bad_epochs,
// stopped_early; since then also epoch_loss_sum, epoch_acc_sum), so that a run folder from any
// version resumes.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace protonet {

struct TrainProgress {
  int64_t epoch = 0;             // epochs finished
  int64_t episode_in_epoch = 0;  // episodes of the current epoch trained (after a stop mid-epoch)
  int64_t episode = 0;           // episodes trained in all
  std::optional<double> best_val_loss, best_val_acc;  // of the best epoch so far; none before the first
  int64_t best_epoch = -1;       // 1-based; -1 before the first
  int64_t bad_epochs = 0;        // epochs since the best one
  bool stopped_early = false;    // patience ran out
  // The current epoch's training loss and accuracy summed over its episodes so far, so that a
  // run resumed mid-epoch reports the whole epoch's means. Saved since they were added
  // (epoch_loss_sum, epoch_acc_sum); an older checkpoint's epoch is summed from the resume on:
  // `summed_from` episodes of it are not in the sums.
  double epoch_loss_sum = 0, epoch_acc_sum = 0;
  int64_t summed_from = 0;

  // One training episode's figures into the epoch's sums.
  void add_episode(double loss, double acc);
  // The epoch's means so far (0 before its first episode).
  double epoch_loss() const;
  double epoch_acc() const;

  // One epoch's validation: records it when its loss is the best so far (returns true), else
  // counts a bad epoch; then moves on to the next epoch and decides on early stopping.
  bool end_epoch(double val_loss, double val_acc, int64_t patience);
  // An epoch of a run without validation (data.trainval): the latest epoch is the result.
  void end_epoch_unvalidated();

  nlohmann::json to_json() const;
  // A checkpoint's values["progress"]; a missing or mistyped key is an
  // mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming it.
  static TrainProgress from_json(const nlohmann::json& j);
};

}  // namespace protonet
