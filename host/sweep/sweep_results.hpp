// A sweep's results: each trial's end (its run folder's summary.json: status, time, the last
// value of every metric), and per configuration the mean over its seeds with a 95% interval,
// written as CSV (trials.csv, summary.csv) and printed as a table.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sweep/sweep_spec.hpp"

namespace mlhost {

struct TrialOutcome {
  SweepTrial trial;
  std::string status;                     // the run's: completed, failed, cancelled, preempted...; "not run"
  std::optional<double> seconds;          // the run's elapsed_seconds
  std::map<std::string, double> metrics;  // the last value of each metric
  bool completed() const { return status == "completed"; }
};

// What the trial's folder in `sweep_dir` says; "not run" when it has no summary yet.
TrialOutcome read_trial_outcome(const std::filesystem::path& sweep_dir, const SweepTrial& trial);

// The mean of `values` and the half width of its 95% confidence interval (Student's t with
// n - 1 degrees of freedom); no interval for fewer than two values.
struct MeanInterval {
  double mean = 0;
  std::optional<double> half_width;
  size_t n = 0;
};
MeanInterval mean_and_interval(const std::vector<double>& values);

// One row per configuration, over its completed seeds.
struct ConfigurationSummary {
  std::string configuration;
  std::vector<std::pair<std::string, std::string>> values;
  size_t trials = 0, completed = 0;
  std::map<std::string, MeanInterval> metrics;
};
std::vector<ConfigurationSummary> summarize(const std::vector<TrialOutcome>& outcomes);

// trials.csv (a row per trial) and summary.csv (a row per configuration: every metric's mean
// and the half width of its 95% interval), written whole and renamed into place.
void write_sweep_csv(const std::filesystem::path& sweep_dir, const std::vector<std::string>& keys,
                     const std::vector<TrialOutcome>& outcomes);

// The metric a progress line shows for a trial: the first, by name, of its evaluation and
// validation metrics, else of its training ones (charts/, train/), else of the rest; none for
// throughput alone.
std::optional<std::pair<std::string, double>> headline_metric(const TrialOutcome& outcome);

// The printed table: a row per configuration, the seeds that completed, and up to
// `max_metrics` metrics as "mean ± half width" (evaluation and validation metrics first).
std::string sweep_table_text(const std::vector<std::string>& keys, const std::vector<TrialOutcome>& outcomes,
                             size_t max_metrics = 4);

}  // namespace mlhost
