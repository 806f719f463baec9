// ProtoNet's calibrate command: the training episode a run of this config trains, on synthetic
// images, timed with the plan's settings; and the reduced-precision quality check on the run's
// own data, judged on classes the check did not train on.
#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <tuple>

#include <ATen/ATen.h>
#include <mlh/runtime/calibration.hpp>
#include <mlh/runtime/precision.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "data_sets.hpp"
#include "evaluate.hpp"
#include "trainer.hpp"

namespace protonet {

namespace {

using nlohmann::json;

// The check's training and held-out sets, class-disjoint as a few-shot run is judged: the
// validation classes where the config names them; else a share of the training classes split
// off (kCheckHeldOutShare, at least the test way where the rest keeps two classes); with fewer
// than four training classes, held-out images of the training classes, as `held_out` says.
struct CheckSets {
  ImageSet train, val;
  std::string held_out;  // what the held-out episodes are drawn from, for the report
};
constexpr size_t kCheckHeldOutShare = 5;  // one class in five

CheckSets check_sets(const Config& cfg, const DataSources& data) {
  CheckSets sets;
  if (cfg.has_val_classes) {
    TrainingSets loaded = load_training_sets(cfg, data);
    sets.train = std::move(loaded.train);
    sets.val = std::move(loaded.val);
    sets.held_out = "the validation classes";
    return sets;
  }
  ImageSet all = load_checked(data.load, cfg.train_data, "training");
  const size_t classes = class_sizes(all).size();
  if (classes < 4) {
    std::tie(sets.train, sets.val) = hold_out(all, cfg.val_fraction, cfg.seed);
    sets.held_out = "held-out images of the " + std::to_string(classes) +
                    " training classes (too few classes to hold some out)";
    return sets;
  }
  const size_t held = std::min(std::max(classes / kCheckHeldOutShare, std::min<size_t>(cfg.test.way, classes / 2)),
                               classes - 2);
  std::tie(sets.train, sets.val) = split_off_classes(all, held);
  sets.held_out = std::to_string(held) + " of the " + std::to_string(classes) +
                  " training classes, held out of the check's training";
  return sets;
}

// The reduced-precision quality check on the user's data, judged by what the run is judged by:
// accuracy on classes it never trained on. From the same initial weights, the same training
// episodes (the config's shape, at most kCheckWay-way) in fp32 and in `reduced`, then the same
// held-out episodes (the config's test shape) on classes the check did not train on
// (check_sets), each model in its own precision. It passes unless the reduced precision's
// accuracy is worse beyond the 95% interval of the paired per-episode differences
// (mlh::rt::held_out_precision_check).
// The budget follows the host's timing bound (request_seconds, about 2 s): fp32 trains for
// 3x that (kCheckMinEpisodes to kCheckMaxEpisodes episodes) and is scored for 2x that
// (kCheckMinHeldOut to kCheckMaxHeldOut episodes); the reduced precision trains and is scored
// on as many.
constexpr int kCheckMinEpisodes = 20, kCheckMaxEpisodes = 100, kCheckMinHeldOut = 30, kCheckMaxHeldOut = 100,
              kCheckWay = 20, kHeldOutChunk = 10;

json precision_check_on_data(const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data,
                             mlh::rt::Precision reduced, double request_seconds) {
  CheckSets sets;
  try {
    sets = check_sets(cfg, data);
  } catch (const std::exception& e) {
    return {{"precision", mlh::rt::to_string(reduced)}, {"passed", false},
            {"reason", std::string("the training data could not be loaded for the check: ") + e.what()}};
  }
  const ImageSet& val_set = sets.val;
  const EpisodeSampler sampler(sets.train), val_sampler(val_set);
  // The training's own episodes, fitted to the data as training fits them (silently: the run
  // says so when it trains), at most kCheckWay-way.
  EpisodeShape shape, val_shape;
  try {
    EpisodeShape asked = cfg.train;
    asked.way = std::min(asked.way, kCheckWay);
    shape = fit_episodes(class_sizes(sets.train), asked, train_shape_fields(), "training").shape;
    val_shape = fit_episodes(class_sizes(val_set), cfg.test, test_shape_fields(), "validation").shape;
  } catch (const std::exception& e) {
    return {{"precision", mlh::rt::to_string(reduced)}, {"passed", false},
            {"reason", std::string("the check's episodes cannot be made: ") + e.what()}};
  }
  std::mt19937_64 rng(cfg.seed + 3);
  const std::vector<EpisodeIndices> train_episodes = sample_episodes(sampler, shape, kCheckMaxEpisodes, rng);
  const std::vector<EpisodeIndices> held_out = sample_episodes(val_sampler, val_shape, kCheckMaxHeldOut, rng);

  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  struct Outcome {
    int64_t trained = 0;
    std::vector<double> accuracies;
    double loss = 0;  // mean over the held-out episodes
  };
  // Trains and scores one model: for the time budget (fp32), or as many episodes as `like` did.
  auto train_and_score = [&](mlh::rt::Precision precision, const Outcome* like) {
    mlh::rt::RuntimePlan p = plan;
    p.precision = precision;
    at::manual_seed(cfg.seed);  // the same initial weights in both
    Trainer l(cfg, sets.train.channels, p);
    l.net->train();
    Outcome out;
    const Clock::time_point train_start = Clock::now();
    for (const EpisodeIndices& e : train_episodes) {
      if (like ? out.trained >= like->trained
               : out.trained >= kCheckMinEpisodes && seconds_since(train_start) > 3 * request_seconds)
        break;
      l.train_step(assemble_episode(sets.train, e));
      ++out.trained;
    }
    const Clock::time_point score_start = Clock::now();
    for (size_t first = 0; first < held_out.size(); first += kHeldOutChunk) {
      const size_t done = out.accuracies.size();
      if (like ? done >= like->accuracies.size()
               : done >= static_cast<size_t>(kCheckMinHeldOut) && seconds_since(score_start) > 2 * request_seconds)
        break;
      const std::vector<EpisodeIndices> chunk(held_out.begin() + static_cast<std::ptrdiff_t>(first),
                                              held_out.begin() + static_cast<std::ptrdiff_t>(
                                                                     std::min(first + kHeldOutChunk, held_out.size())));
      const EpisodeStats stats = evaluate(l, val_set, chunk);
      out.loss += stats.loss * static_cast<double>(chunk.size());
      out.accuracies.insert(out.accuracies.end(), stats.accuracies.begin(), stats.accuracies.end());
    }
    out.loss /= static_cast<double>(std::max<size_t>(out.accuracies.size(), 1));
    return out;
  };
  const Outcome fp32 = train_and_score(mlh::rt::Precision::kFp32, nullptr);
  const Outcome low = train_and_score(reduced, &fp32);
  json check = mlh::rt::held_out_precision_check(reduced, fp32.accuracies, low.accuracies, fp32.loss, low.loss,
                                                 fp32.trained);
  check["on"] = std::to_string(fp32.trained) + " training episodes " + shape_name(shape) + ", then " +
                std::to_string(fp32.accuracies.size()) + " held-out episodes " + shape_name(val_shape) + " of " +
                sets.held_out;
  return check;
}

// The episode a run of this config trains: the config's training shape, its way capped at the
// training classes the data lists (as training caps it), on images of the data's size. The
// note says where the way came from.
struct RunEpisode {
  EpisodeShape shape;
  int height = 28, width = 28, channels = 1;
  std::string note;

  std::string name() const {
    return "train_episode_" + std::to_string(shape.way) + "way_" + std::to_string(shape.shot) + "shot_" +
           std::to_string(shape.query) + "query_" + std::to_string(height) + "x" + std::to_string(width) + "x" +
           std::to_string(channels);
  }
};

RunEpisode run_episode(const Config& cfg, const DataSources& data) {
  RunEpisode e;
  e.shape = cfg.train;
  e.height = cfg.train_data.height;
  e.width = cfg.train_data.width;
  e.channels = cfg.train_data.channels;
  try {
    const size_t classes = classes_of(data, cfg.train_data, "training").size();
    if (classes >= 2 && static_cast<size_t>(e.shape.way) > classes) {
      e.note = std::to_string(e.shape.way) + "-way asked, the training data has " + std::to_string(classes) +
               " classes: timed " + std::to_string(classes) + "-way, as training runs";
      e.shape.way = static_cast<int>(classes);
    }
  } catch (const std::exception& ex) {
    e.note = std::string("the training classes could not be listed (") + ex.what() + "): timed the config's " +
             std::to_string(e.shape.way) + "-way";
  }
  return e;
}

}  // namespace

// The training episode a run of this config trains (run_episode: its way, shot, query and
// image size), on synthetic images, with the plan's threads and precision
// (mlh/runtime/calibration.hpp); and, when the host asks, the reduced-precision quality check
// on the run's own data.
void calibrate(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data) {
  const auto request = mlh::rt::CalibrationRequest::parse(ctx.plan_json());
  const RunEpisode episode = run_episode(cfg, data);
  const EpisodeShape& shape = episode.shape;
  const ImageSet set = synthetic_set(std::max(shape.way, 5), shape.shot + shape.query, episode.height, episode.width,
                                     episode.channels);
  json reply;
  {
    Trainer l(cfg, episode.channels, plan);
    l.net->train();
    const std::vector<Episode> episodes = training_episodes(set, shape, 2, cfg.seed);
    size_t next = 0;
    reply["calibration"] = mlh::rt::time_calibration_step(
        episode.name(), [&] { l.train_step(episodes[next++ % episodes.size()]); }, 1.0, "episodes", plan.device,
        request);
    if (!episode.note.empty()) reply["calibration"]["note"] = episode.note;
  }
  if (request.check_precision)
    reply["precision_check"] = precision_check_on_data(cfg, plan, data, *request.check_precision, request.seconds);
  ctx.summary(reply.dump());
}

}  // namespace protonet
