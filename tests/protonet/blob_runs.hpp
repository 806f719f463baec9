// The in-memory data and runner the ProtoNet command tests share: classes of bright blobs at
// their own places on a 28x28 grid (easy to learn in a few episodes), a loader that serves
// them for the "train" and "test" roots, and a command run through the fake host.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "fake_host.hpp"

namespace protonet_test {

using nlohmann::json;
using protonet::ImageSet;

// Class c is a bright 6x6 blob at its own place on a 28x28 grid, jittered by up to 2 pixels,
// over uniform noise.
inline ImageSet blobs(int classes, int per_class, uint64_t seed) {
  ImageSet s;
  s.channels = 1;
  s.height = s.width = 28;
  std::mt19937_64 rng(seed);
  for (int c = 0; c < classes; ++c) s.class_names.push_back("blob" + std::to_string(c));
  for (int c = 0; c < classes; ++c) {
    const int cy = 4 + (c / 4) * 7, cx = 4 + (c % 4) * 7;
    for (int i = 0; i < per_class; ++i) {
      const int dy = static_cast<int>(rng() % 5) - 2, dx = static_cast<int>(rng() % 5) - 2;
      for (int y = 0; y < 28; ++y)
        for (int x = 0; x < 28; ++x) {
          const bool in = std::abs(y - cy - dy) <= 3 && std::abs(x - cx - dx) <= 3;
          s.pixels.push_back(static_cast<uint8_t>((in ? 150 : 0) + rng() % 100));
        }
      s.labels.push_back(c);
    }
  }
  return s;
}

// The loader the tests pass: "train" and "test" roots give blob sets of their classes.
inline ImageSet fake_load(const protonet::DatasetSpec& spec) {
  ImageSet all = blobs(12, 40, spec.root == "test" ? 2 : 1);
  ImageSet out;
  out.channels = all.channels;
  out.height = all.height;
  out.width = all.width;
  out.class_names = all.class_names;
  for (size_t i = 0; i < all.size(); ++i) {
    bool keep = spec.classes.empty();
    for (int32_t c : spec.classes) keep = keep || c == all.labels[i];
    if (!keep) continue;
    out.labels.push_back(all.labels[i]);
    out.pixels.insert(out.pixels.end(), all.image(i), all.image(i) + all.image_bytes());
  }
  return out;
}

// Runs `command` with the config; returns the status code (MLH_OK or the mlh::Error's).
inline const char* kPlan = R"({"torch_device": "cpu", "precision": "fp32"})";

inline mlh_status run(FakeHost& host, const std::string& command, const json& config, const std::string& run_dir,
               bool resume = false, std::string* error = nullptr, const std::string& plan_json = kPlan) {
  return run_in_process(host, [](mlh::RunContext& ctx) { protonet::run_command(ctx, fake_load); },
                        {command, config.dump(), run_dir, plan_json, "{}", resume}, error);
}

// The same training run twice: whole, and stopped at episode `stop_at` then resumed, with the
// threads pinned so that both reduce in the same order and agree bit for bit. `error` holds the
// first failure.
struct WholeAndResumed {
  FakeHost whole, stopped, resumed;
  std::string stop_message;  // what the stopped run ended with
};
inline const char* kPinnedPlan = R"({"torch_device": "cpu", "precision": "fp32", "threads": {"intra_op": 2}})";
inline void train_whole_and_resumed(const json& config, int64_t stop_at, const std::string& whole_dir,
                                    const std::string& stopped_dir, WholeAndResumed& runs, std::string& error) {
  mlh_status status = run(runs.whole, "train", config, whole_dir, false, &error, kPinnedPlan);
  if (status != MLH_OK) return;
  runs.stopped.stop_at = stop_at;
  status = run(runs.stopped, "train", config, stopped_dir, false, &error, kPinnedPlan);
  if (status != MLH_ERR_CANCELLED) {
    error = "the stopped run ended with status " + std::to_string(status) + ", not cancelled: " + error;
    return;
  }
  runs.stop_message = error;
  error.clear();
  run(runs.resumed, "train", config, stopped_dir, true, &error, kPinnedPlan);
}

inline json small_config() {
  return {{"data", {{"root", "train"}, {"train_classes", {0, 1, 2, 3, 4, 5, 6, 7}}, {"test_root", "test"},
                    {"test_classes", {8, 9, 10, 11}}, {"val_fraction", 0.25}}},
          {"train_way", 5}, {"train_shot", 2}, {"train_query", 3},
          {"test_way", 4}, {"test_shot", 2}, {"test_query", 5},
          {"epochs", 3}, {"episodes_per_epoch", 8}, {"val_episodes", 10}, {"patience", 5},
          {"width", 16}, {"seed", 11}, {"eval_episodes", 40}};
}

}  // namespace protonet_test
