// ProtoNet's commands on a trained run (its best or latest checkpoint): eval, the test accuracy
// with its 95% confidence interval; classify, where a support folder (a subfolder per class,
// any number of shots) gives the prototypes and each query image gets its nearest class and
// the distance-based probabilities of every class.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include <ATen/ATen.h>
#include <mlh/format.hpp>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include "commands.hpp"
#include "data_sets.hpp"
#include "evaluate.hpp"
#include "trained_model.hpp"
#include "trainer.hpp"

namespace protonet {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Query files: each file given, or every regular file of each folder given (sorted).
std::vector<std::string> query_files(const std::vector<std::string>& query) {
  std::vector<std::string> files;
  for (const std::string& q : query) {
    std::error_code ec;
    if (fs::is_directory(q, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& entry : fs::directory_iterator(q, ec))
        if (entry.is_regular_file()) in_dir.push_back(entry.path().string());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.push_back(q);
    }
  }
  return files;
}

std::vector<int64_t> all_indices(const ImageSet& set) {
  std::vector<int64_t> all(set.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  return all;
}

}  // namespace

void eval(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data) {
  report_folder_data(ctx, cfg, cfg.test_data, "test");
  const ImageSet test_set = load_checked(data.load, cfg.test_data, "test");
  check_test_classes(ctx, cfg, data, present_classes(test_set), /*known_are_trained=*/false);
  Trainer l(cfg, test_set.channels, plan);
  const mlh::rt::LoadedCheckpoint loaded = load_trained(ctx, cfg, l);
  const EpisodeSampler sampler(test_set);
  const EpisodeShape shape = fit_shape(ctx, cfg.test, test_set, test_shape_fields(), "test", cfg.test_data, cfg.strict_data);
  std::mt19937_64 rng(cfg.seed + 2);
  const std::vector<EpisodeIndices> episodes = sample_episodes(sampler, shape, cfg.eval_episodes, rng);
  const EpisodeStats s =
      evaluate(l, test_set, episodes, [&](int64_t i) { ctx.progress(i, cfg.eval_episodes, "episodes"); });
  double var = 0;
  for (double a : s.accuracies) var += (a - s.accuracy) * (a - s.accuracy);
  const double n = static_cast<double>(s.accuracies.size());
  const double ci95 = n > 1 ? 1.96 * std::sqrt(var / (n - 1)) / std::sqrt(n) : 0.0;
  ctx.metric("eval/acc", s.accuracy, loaded.step);
  ctx.metric("eval/acc_ci95", ci95, loaded.step);
  ctx.metric("eval/loss", s.loss, loaded.step);
  ctx.info("test accuracy, " + shape_name(shape) + ", " + std::to_string(cfg.eval_episodes) + " episodes: " +
           mlh::fixed(100 * s.accuracy, 2) + "% +- " + mlh::fixed(100 * ci95, 2) + "% (95% CI); checkpoint " + loaded.path);
  ctx.summary(json{{"accuracy", s.accuracy},
                   {"ci95", ci95},
                   {"loss", s.loss},
                   {"episodes", cfg.eval_episodes},
                   {"way", shape.way},
                   {"shot", shape.shot},
                   {"query", shape.query},
                   {"checkpoint", loaded.path}}
                  .dump());
}

void classify(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data) {
  if (cfg.support_dir.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "classify: set support_dir");
  if (cfg.query.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "classify: set query (a folder or files)");
  if (!data.decode) throw mlh::Error(MLH_ERR_UNSUPPORTED, "classify: this build has no image decoder");
  DatasetSpec spec = cfg.train_data;
  spec.format = "folder";
  spec.root = cfg.support_dir;
  spec.labels.clear();
  spec.split.clear();
  spec.classes.clear();
  spec.rotations = false;
  spec.cache_dir.clear();
  const ImageSet support = load_checked(data.load, spec, "support");
  const std::vector<std::string> files = query_files(cfg.query);
  if (files.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "classify: no query images");
  ImageSet queries;
  try {
    queries = data.decode(files, spec);
  } catch (const DataError& e) {
    throw DataError(std::string("classify: ") + e.what());
  }

  Trainer l(cfg, support.channels, plan);
  const mlh::rt::LoadedCheckpoint loaded = load_trained(ctx, cfg, l);
  torch::NoGradGuard no_grad;
  l.net->eval();

  // Prototypes: the mean embedding of each class's support images (any number of shots).
  const int64_t way = static_cast<int64_t>(support.class_names.size());
  const at::Tensor support_emb = l.net->forward(images_to_tensor(support, all_indices(support)).to(plan.device)).to(at::kFloat);
  const at::Tensor labels = at::tensor(std::vector<int64_t>(support.labels.begin(), support.labels.end()), at::kLong)
                                .to(plan.device);
  at::Tensor protos = at::zeros({way, support_emb.size(1)}, support_emb.options());
  protos.index_add_(0, labels, support_emb);
  const at::Tensor counts = at::bincount(labels, {}, way).to(at::kFloat).clamp_min(1).unsqueeze(1);
  protos = protos / counts;

  const at::Tensor query_emb = l.net->forward(images_to_tensor(queries, all_indices(queries)).to(plan.device)).to(at::kFloat);
  const at::Tensor probs =
      at::softmax(proto_logits(query_emb, protos, l.distance, cfg.cosine_scale), 1).to(at::kCPU).contiguous();
  json results = json::array();
  for (size_t i = 0; i < files.size() && static_cast<int64_t>(i) < probs.size(0); ++i) {
    const at::Tensor row = probs[static_cast<int64_t>(i)];
    const int64_t best = row.argmax().item<int64_t>();
    json p = json::object();
    std::string text = files[i] + ": " + support.class_names[static_cast<size_t>(best)] + " (";
    for (int64_t c = 0; c < way; ++c) {
      const double v = row[c].item<double>();
      p[support.class_names[static_cast<size_t>(c)]] = v;
      text += (c ? ", " : "") + support.class_names[static_cast<size_t>(c)] + " " + mlh::fixed(v, 3);
    }
    ctx.info(text + ")");
    results.push_back({{"file", files[i]},
                       {"class", support.class_names[static_cast<size_t>(best)]},
                       {"probability", row[best].item<double>()},
                       {"probabilities", p}});
  }
  ctx.summary(json{{"predictions", results},
                   {"classes", support.class_names},
                   {"support_images", support.size()},
                   {"checkpoint", loaded.path}}
                  .dump());
}

}  // namespace protonet
