#include "progress.hpp"

#include <string>

#include <mlh/plugin.hpp>

namespace protonet {

using nlohmann::json;

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
  episode_in_epoch = 0;
  stopped_early = bad_epochs >= patience;
  return better;
}

json TrainProgress::to_json() const {
  auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"epoch", epoch},
          {"episode_in_epoch", episode_in_epoch},
          {"episode", episode},
          {"best_val_loss", optional(best_val_loss)},
          {"best_val_acc", optional(best_val_acc)},
          {"best_epoch", best_epoch},
          {"bad_epochs", bad_epochs},
          {"stopped_early", stopped_early}};
}

TrainProgress TrainProgress::from_json(const json& j) {
  TrainProgress p;
  std::string key;
  try {
    auto integer = [&](const char* name) {
      key = name;
      return j.at(name).get<int64_t>();
    };
    auto optional = [&](const char* name) -> std::optional<double> {
      key = name;
      const json& v = j.at(name);
      if (v.is_null()) return std::nullopt;
      return v.get<double>();
    };
    p.epoch = integer("epoch");
    p.episode_in_epoch = integer("episode_in_epoch");
    p.episode = integer("episode");
    p.best_val_loss = optional("best_val_loss");
    p.best_val_acc = optional("best_val_acc");
    p.best_epoch = integer("best_epoch");
    p.bad_epochs = integer("bad_epochs");
    key = "stopped_early";
    p.stopped_early = j.at("stopped_early").get<bool>();
  } catch (const json::exception& e) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "checkpoint: progress." + key + ": " + e.what());
  }
  return p;
}

}  // namespace protonet
