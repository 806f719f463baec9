#include "benchmark_encoders.hpp"

#include <string>

#include <mlh/format.hpp>

#include "data_sets.hpp"
#include "trainer.hpp"

namespace protonet {

using nlohmann::json;

namespace {

struct ImageShape {
  int height, width, channels;
  std::string name() const {
    return std::to_string(height) + "x" + std::to_string(width) + "x" + std::to_string(channels);
  }
};

}  // namespace

json compare_encoders(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan,
                      std::vector<mlh::rt::BenchmarkResult>& results, json& notes) {
  // A small episode (5-way 1-shot 3-query, 20 images): ResNet-12 trains one 84x84x3 episode
  // in seconds on a CPU, so two timed ones after a warm-up keep the comparison to a minute.
  const EpisodeShape shape{5, 1, 3};
  const double images = static_cast<double>(shape.way * (shape.shot + shape.query));
  mlh::rt::BenchmarkOptions options;
  options.device = plan.device;
  options.min_seconds = 1.0;
  options.min_iterations = 2;
  options.warmup_iterations = 1;
  options.items_per_iteration = images;
  options.unit = "images";
  // ResNet-12 needs an even width; an odd Conv-4 width is compared with the next even one.
  const int64_t resnet_width = cfg.width % 2 == 0 ? cfg.width : cfg.width + 1;
  json out = json::object();
  for (const ImageShape& size : {ImageShape{28, 28, 1}, ImageShape{84, 84, 3}}) {
    const ImageSet set = synthetic_set(shape.way, shape.shot + shape.query, size.height, size.width, size.channels);
    const std::vector<Episode> episodes = training_episodes(set, shape, 2, cfg.seed);
    json row = json::object();
    for (const char* encoder : {"conv4", "resnet12"}) {
      Config c = cfg;  // the Trainer keeps a reference: c outlives it
      c.encoder = encoder;
      if (c.encoder == "resnet12") c.width = resnet_width;
      Trainer l(c, size.channels, plan);
      l.net->train();
      size_t next = 0;
      const std::string name = std::string("compare_") + encoder + "_train_episode_5way_1shot_3query_" + size.name();
      results.push_back(
          mlh::rt::run_benchmark(name, [&] { l.train_step(episodes[next++ % episodes.size()]); }, options));
      row[encoder] = results.back().throughput;
      ctx.info(name + ": " + mlh::fixed(results.back().throughput, 1) + " images/s (" + l.net->name() + ", " +
               std::to_string(l.net->parameter_count()) + " parameters)");
    }
    row["conv4_over_resnet12"] = row["conv4"].get<double>() / row["resnet12"].get<double>();
    notes.push_back("training " + size.name() + " images: Conv-4 " + mlh::fixed(row["conv4"].get<double>(), 1) +
                    " images/s, ResNet-12 " + mlh::fixed(row["resnet12"].get<double>(), 1) + " images/s: Conv-4 " +
                    mlh::fixed(row["conv4_over_resnet12"].get<double>(), 1) + "x as fast");
    ctx.info(notes.back().get<std::string>());
    out[size.name()] = row;
  }
  return out;
}

}  // namespace protonet
