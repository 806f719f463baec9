#include "progress.hpp"

#include <string>
#include <utility>

#include <mlh/plugin.hpp>

namespace protonet {

using nlohmann::json;

namespace {

// The keys of the checkpoint's "progress" and the fields they hold: the counters, and the best
// epoch's figures (null before the first epoch ends).
constexpr std::pair<const char*, int64_t TrainProgress::*> kCounters[] = {
    {"epoch", &TrainProgress::epoch},           {"episode_in_epoch", &TrainProgress::episode_in_epoch},
    {"episode", &TrainProgress::episode},       {"best_epoch", &TrainProgress::best_epoch},
    {"bad_epochs", &TrainProgress::bad_epochs}};
constexpr std::pair<const char*, std::optional<double> TrainProgress::*> kBest[] = {
    {"best_val_loss", &TrainProgress::best_val_loss}, {"best_val_acc", &TrainProgress::best_val_acc}};

// progress[key] as a T; missing or of another type: an mlh::Error naming it.
template <class T>
T read(const json& progress, const char* key) {
  try {
    return progress.at(key).get<T>();
  } catch (const json::exception& e) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("checkpoint: progress.") + key + ": " + e.what());
  }
}

}  // namespace

namespace {

void start_epoch_sums(TrainProgress& p) {
  p.episode_in_epoch = 0;
  p.epoch_loss_sum = p.epoch_acc_sum = 0;
  p.summed_from = 0;
}

}  // namespace

void TrainProgress::add_episode(double loss, double acc) {
  epoch_loss_sum += loss;
  epoch_acc_sum += acc;
}

double TrainProgress::epoch_loss() const {
  const int64_t n = episode_in_epoch - summed_from;
  return n > 0 ? epoch_loss_sum / static_cast<double>(n) : 0.0;
}

double TrainProgress::epoch_acc() const {
  const int64_t n = episode_in_epoch - summed_from;
  return n > 0 ? epoch_acc_sum / static_cast<double>(n) : 0.0;
}

bool TrainProgress::end_epoch(double val_loss, double val_acc, int64_t patience) {
  const bool better = !best_val_loss || val_loss < *best_val_loss;
  if (better) {
    best_val_loss = val_loss;
    best_val_acc = val_acc;
    best_epoch = epoch + 1;
    bad_epochs = 0;
  } else {
    ++bad_epochs;
  }
  ++epoch;
  start_epoch_sums(*this);
  stopped_early = bad_epochs >= patience;
  return better;
}

void TrainProgress::end_epoch_unvalidated() {
  ++epoch;
  start_epoch_sums(*this);
  best_epoch = epoch;
}

json TrainProgress::to_json() const {
  json j = {{"stopped_early", stopped_early}};
  for (const auto& [key, counter] : kCounters) j[key] = this->*counter;
  for (const auto& [key, figure] : kBest) j[key] = (this->*figure) ? json(*(this->*figure)) : json(nullptr);
  // Only where they hold something: a progress without them (an epoch's start, or an older
  // checkpoint's mid-epoch one) writes the same text as before they existed.
  if (summed_from < episode_in_epoch) {
    j["epoch_loss_sum"] = epoch_loss_sum;
    j["epoch_acc_sum"] = epoch_acc_sum;
    j["summed_from"] = summed_from;
  }
  return j;
}

TrainProgress TrainProgress::from_json(const json& j) {
  TrainProgress p;
  for (const auto& [key, counter] : kCounters) p.*counter = read<int64_t>(j, key);
  for (const auto& [key, figure] : kBest)
    if (read<json>(j, key).is_null()) p.*figure = std::nullopt;
    else p.*figure = read<double>(j, key);
  p.stopped_early = read<bool>(j, "stopped_early");
  if (j.contains("epoch_loss_sum")) {
    p.epoch_loss_sum = read<double>(j, "epoch_loss_sum");
    p.epoch_acc_sum = read<double>(j, "epoch_acc_sum");
    p.summed_from = read<int64_t>(j, "summed_from");
  } else {
    p.summed_from = p.episode_in_epoch;  // an older checkpoint: its epoch's sums are not known
  }
  return p;
}

}  // namespace protonet
