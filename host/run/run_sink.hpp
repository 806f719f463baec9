// Where a run's callbacks land in the worker: log.txt and the console, metrics.jsonl,
// metrics.csv and TensorBoard event files, the progress display, and the final summary.
// Callbacks may come from any thread of the plugin, so everything is under one lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "run/progress.hpp"
#include "run/tensorboard.hpp"

namespace mlhost {

class RunSink {
 public:
  // Opens (appends to) the run folder's files; TensorBoard events go to event_dir(dir).
  // `console` false (the ranks other than 0 of a distributed run): only warnings and errors
  // reach the terminal, prefixed with `console_prefix`, and no progress bar is drawn.
  // `resumed`: this launch continues from a checkpoint, so its first metric's step is where
  // training picked up; rows an earlier attempt logged at that step or later (it died past
  // its checkpoint) are dropped from metrics.jsonl and metrics.csv, and TensorBoard is told
  // to drop them, so that each step appears once. The metrics' `time` then goes on from the
  // last kept row's: the run's elapsed time across its launches.
  explicit RunSink(const std::filesystem::path& dir, bool console = true, std::string console_prefix = "",
                   bool resumed = false);

  void log(int32_t level, const char* message);
  // A line for log.txt alone (what the worker also says on its console in its own words).
  void record(int32_t level, const std::string& message);
  void metric(const char* name, double value, int64_t step);
  void progress(int64_t done, int64_t total, const char* unit);
  void summary(const char* summary_json);
  // TensorBoard's hparams summaries of a training run: its hyperparameters at the start, its
  // status at the end, in the run's one session file that each launch replaces
  // (HparamsSessionFile, tensorboard.hpp).
  void hparams_start(const nlohmann::json& hparams);
  void hparams_end(HparamsStatus status);

  nlohmann::json result() const;
  nlohmann::json last_metrics() const;
  double seconds() const;

 private:
  void supersede_from(int64_t step);  // see the constructor

  mutable std::mutex mu_;
  std::filesystem::path dir_;
  bool superseding_;  // resumed, and no metric yet
  std::ofstream log_, jsonl_, csv_;
  std::unique_ptr<EventFileWriter> events_;
  std::unique_ptr<HparamsSessionFile> hparams_;  // a training run's, from hparams_start
  ProgressDisplay progress_;
  bool console_;
  std::string console_prefix_;
  nlohmann::json result_ = nullptr;
  nlohmann::json last_metrics_ = nlohmann::json::object();
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double time_offset_ = 0;  // a resumed run's elapsed time at its checkpoint (supersede_from)
};

}  // namespace mlhost
