// ProtoNet's parts: config, episode sampler and assembly, prototypical loss, Conv-4 shapes,
// gradient checkpointing, and the training progress a checkpoint holds.
#include <cmath>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include "config.hpp"
#include "data_sets.hpp"
#include "episode_fit.hpp"
#include "episode_sampler.hpp"
#include "model.hpp"
#include "progress.hpp"
#include "proto_loss.hpp"

namespace {

using nlohmann::json;
using protonet::ImageSet;

// `classes` classes of `per_class` images; pixel 0 of image i holds i % 256, pixel 1 i / 256.
ImageSet indexed_set(int classes, int per_class, int size = 8) {
  ImageSet s;
  s.channels = 1;
  s.height = s.width = size;
  // append(), not "c" + to_string(c): GCC 12 warns falsely (-Wstringop-overflow) on the
  // latter when built against LibTorch 2.x.
  for (int c = 0; c < classes; ++c) s.class_names.push_back(std::string("c").append(std::to_string(c)));
  for (int i = 0; i < classes * per_class; ++i) {
    std::vector<uint8_t> img(s.image_bytes(), 0);
    img[0] = static_cast<uint8_t>(i % 256);
    img[1] = static_cast<uint8_t>(i / 256);
    img[2] = 255;
    s.pixels.insert(s.pixels.end(), img.begin(), img.end());
    s.labels.push_back(i % classes);  // classes interleaved
  }
  return s;
}

TEST(ProtonetConfig, DefaultsSchemaAndPresetsParse) {
  const json schema = json::parse(protonet::config_schema_json());
  const json defaults = json::parse(protonet::config_defaults_json());
  const json presets = json::parse(protonet::presets_json());
  // Every default is a schema property (additionalProperties is false).
  for (auto& [key, value] : defaults.items()) EXPECT_TRUE(schema["properties"].contains(key)) << key;
  for (auto& [key, value] : defaults["data"].items())
    EXPECT_TRUE(schema["properties"]["data"]["properties"].contains(key)) << key;
  EXPECT_FALSE(schema["properties"].contains("batch_size"));
  for (auto& [name, preset] : presets.items()) {
    for (auto& [key, value] : preset.items()) {
      if (key[0] != '$') {
        EXPECT_TRUE(schema["properties"].contains(key)) << name << "." << key;
      }
    }
  }

  const protonet::Config c = protonet::parse_config(json::object());
  EXPECT_EQ(c.train_data.format, "idx");
  EXPECT_EQ(c.train_data.classes, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(c.test_data.classes, (std::vector<int32_t>{5, 6, 7, 8, 9}));
  EXPECT_FALSE(c.has_val_classes);
  EXPECT_TRUE(c.validate) << "every run validates but a retraining on train + val";
  EXPECT_FALSE(protonet::parse_config({{"data", {{"trainval", true}}}}).validate);
  EXPECT_EQ(c.train.way, 5);  // the default data's 5 training classes
  EXPECT_EQ(c.train.query, 5);
  EXPECT_EQ(c.test.way, 5);
  EXPECT_EQ(c.test.query, 15);
  EXPECT_EQ(c.train.shot, c.test.shot);
  EXPECT_TRUE(c.query.empty());

  // Conv-4's size is what the presets announce.
  protonet::Conv4 gray(1, 64), rgb(3, 64);
  EXPECT_EQ(gray->parameter_count(), presets["full"]["$parameters"].get<int64_t>());
  EXPECT_EQ(gray->parameter_count(), presets["reduced"]["$parameters"].get<int64_t>());
  EXPECT_EQ(rgb->parameter_count(), 113088);
}

TEST(ProtonetConfig, SplitFormatsAndOverrides) {
  const protonet::Config o = protonet::parse_config(
      {{"data", {{"format", "omniglot"}, {"root", "/d/omniglot"}, {"test_root", ""}}}, {"query", {"a.png", "b.png"}}});
  EXPECT_EQ(o.train_data.split, "train");
  EXPECT_TRUE(o.has_val_classes);
  EXPECT_EQ(o.val_data.split, "val");
  EXPECT_EQ(o.test_data.split, "test");
  EXPECT_EQ(o.test_data.root, "/d/omniglot");
  EXPECT_EQ(o.query, (std::vector<std::string>{"a.png", "b.png"}));
  const protonet::Config v = protonet::parse_config({{"data", {{"val_classes", {3, 4}}}}, {"query", "dir"}});
  EXPECT_TRUE(v.has_val_classes);
  EXPECT_EQ(v.val_data.classes, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(v.query, (std::vector<std::string>{"dir"}));
  EXPECT_THROW(protonet::parse_config({{"epochs", "many"}}), mlh::Error);
}

TEST(ProtonetSampler, EpisodesHaveDistinctClassesAndImages) {
  const ImageSet set = indexed_set(12, 20);
  const protonet::EpisodeSampler sampler(set);
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    const protonet::EpisodeIndices e = sampler.sample(5, 3, 4, rng);
    ASSERT_EQ(e.classes.size(), 5u);
    ASSERT_EQ(e.images.size(), 5u * 7);
    EXPECT_EQ(std::set<int32_t>(e.classes.begin(), e.classes.end()).size(), 5u);
    EXPECT_EQ(std::set<int64_t>(e.images.begin(), e.images.end()).size(), e.images.size());
    for (size_t i = 0; i < 15; ++i) EXPECT_EQ(set.labels[e.images[i]], e.classes[i / 3]);       // support
    for (size_t i = 0; i < 20; ++i) EXPECT_EQ(set.labels[e.images[15 + i]], e.classes[i / 4]);  // query
  }
}

TEST(ProtonetSampler, ReproducibleWithASeed) {
  const ImageSet set = indexed_set(12, 20);
  const protonet::EpisodeSampler sampler(set);
  std::mt19937_64 a(42), b(42), c(43);
  for (int i = 0; i < 5; ++i) {
    const auto ea = sampler.sample(5, 2, 3, a), eb = sampler.sample(5, 2, 3, b), ec = sampler.sample(5, 2, 3, c);
    EXPECT_EQ(ea.classes, eb.classes);
    EXPECT_EQ(ea.images, eb.images);
    EXPECT_NE(ea.images, ec.images);
  }
}

TEST(ProtonetSampler, TooFewClassesOrImagesIsAnError) {
  ImageSet set = indexed_set(4, 6);
  const protonet::EpisodeSampler sampler(set);
  std::mt19937_64 rng(0);
  EXPECT_THROW(sampler.sample(5, 1, 1, rng), mlh::Error);   // 4 classes
  EXPECT_THROW(sampler.sample(2, 4, 3, rng), mlh::Error);   // 6 images per class < 7
  EXPECT_NO_THROW(sampler.sample(4, 3, 3, rng));
  EXPECT_EQ(sampler.eligible_classes(6), 4);
  EXPECT_EQ(sampler.eligible_classes(7), 0);
}

// Episodes fitted to a folder of a researcher's size: the way to the classes, then the query
// to the smallest of them, the shot only where two classes have no room for it; each change
// names the value used and the field; classes with too few images are named; no episode at
// all is refused naming what it needs.
std::vector<protonet::ClassSize> classes_of_sizes(std::vector<int64_t> sizes) {
  std::vector<protonet::ClassSize> out;
  for (size_t i = 0; i < sizes.size(); ++i) out.push_back({"c" + std::to_string(i), sizes[i]});
  return out;
}

TEST(ProtonetEpisodeFit, TheWayTheQueryAndOnlyThenTheShotAreFittedToTheData) {
  const protonet::ShapeFields f{"train_way", "train_shot", "train_query"};
  // Enough of everything: unchanged.
  protonet::EpisodeFit fit = protonet::fit_episodes(classes_of_sizes({30, 30, 30, 30, 30, 30}), {5, 5, 15}, f, "training");
  EXPECT_EQ(fit.shape.way, 5);
  EXPECT_EQ(fit.shape.query, 15);
  EXPECT_TRUE(fit.changes.empty());
  EXPECT_TRUE(fit.dropped.empty());

  // 12 classes of 18 images (20 less the held-out share), 20-way 5-shot 15-query asked.
  fit = protonet::fit_episodes(classes_of_sizes(std::vector<int64_t>(12, 18)), {20, 5, 15}, f, "training");
  EXPECT_EQ(fit.shape.way, 12);
  EXPECT_EQ(fit.shape.shot, 5);
  EXPECT_EQ(fit.shape.query, 13);
  ASSERT_EQ(fit.changes.size(), 2u);
  EXPECT_NE(fit.changes[0].find("12-way, not the 20-way train_way asks"), std::string::npos) << fit.changes[0];
  EXPECT_NE(fit.changes[0].find("train_way=12"), std::string::npos) << fit.changes[0];
  EXPECT_NE(fit.changes[1].find("13-query, not the 15-query train_query asks"), std::string::npos) << fit.changes[1];
  EXPECT_NE(fit.changes[1].find("train_query=13"), std::string::npos) << fit.changes[1];

  // A class too small for the shot is left out and named; the others keep the shot.
  fit = protonet::fit_episodes(classes_of_sizes({20, 20, 20, 4}), {5, 5, 15}, f, "training");
  EXPECT_EQ(fit.shape.way, 3);
  EXPECT_EQ(fit.shape.query, 15);
  ASSERT_EQ(fit.dropped.size(), 1u);
  EXPECT_EQ(fit.dropped[0].name, "c3");
  EXPECT_EQ(fit.dropped[0].images, 4);

  // Two images a class: 1-shot 1-query, every change said.
  fit = protonet::fit_episodes(classes_of_sizes({2, 2, 2}), {5, 5, 15}, {"test_way", "test_shot", "test_query"},
                               "validation");
  EXPECT_EQ(fit.shape.way, 3);
  EXPECT_EQ(fit.shape.shot, 1);
  EXPECT_EQ(fit.shape.query, 1);
  EXPECT_EQ(fit.changes.size(), 3u);
  EXPECT_NE(fit.changes[0].find("validation episodes: 1-shot, not the 5-shot test_shot asks"), std::string::npos)
      << fit.changes[0];

  // No episode: refused, saying what an episode needs.
  try {
    protonet::fit_episodes(classes_of_sizes({40, 1, 1}), {5, 5, 15}, f, "test");
    ADD_FAILURE() << "one class with more than one image makes no episode";
  } catch (const mlh::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("test set: no episode can be made from it: 3 classes, the largest with 40 images"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at least 2 classes of at least 2 images"), std::string::npos) << e.what();
  }
}

// The precision check's held-out classes: evenly spread, disjoint from the rest, every image kept.
TEST(ProtonetSplit, SplitOffClassesIsClassDisjointAndSpread) {
  const ImageSet set = protonet::synthetic_set(10, 3);
  const auto [kept, held] = protonet::split_off_classes(set, 3);
  std::set<int32_t> kept_labels(kept.labels.begin(), kept.labels.end()),
      held_labels(held.labels.begin(), held.labels.end());
  EXPECT_EQ(held_labels, (std::set<int32_t>{3, 6, 9}));
  EXPECT_EQ(kept_labels.size(), 7u);
  for (int32_t l : held_labels) EXPECT_EQ(kept_labels.count(l), 0u) << l;
  EXPECT_EQ(kept.size() + held.size(), set.size());
  EXPECT_EQ(held.class_names, set.class_names);
  EXPECT_EQ(held.size(), 9u);
}

TEST(ProtonetEpisode, AssemblyShapesValuesAndTargets) {
  const ImageSet set = indexed_set(10, 30);
  const protonet::EpisodeSampler sampler(set);
  std::mt19937_64 rng(1);
  const protonet::EpisodeIndices idx = sampler.sample(4, 2, 3, rng);
  const protonet::Episode e = protonet::assemble_episode(set, idx);
  EXPECT_EQ(e.images.sizes(), (at::IntArrayRef{20, 1, 8, 8}));
  EXPECT_EQ(e.images.scalar_type(), at::kFloat);
  EXPECT_EQ(e.support.size(0), 8);
  EXPECT_EQ(e.query_images.size(0), 12);
  EXPECT_TRUE(at::equal(e.query_targets, at::tensor({0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}, at::kLong)));
  EXPECT_LE(e.images.max().item<float>(), 1.0f);
  EXPECT_GE(e.images.min().item<float>(), 0.0f);
  for (int64_t i = 0; i < 20; ++i) {
    const auto px = (e.images[i].flatten() * 255).round().to(at::kLong);
    EXPECT_EQ(px[0].item<int64_t>() + 256 * px[1].item<int64_t>(), idx.images[i]);
    EXPECT_EQ(px[2].item<int64_t>(), 255);
  }
}

TEST(ProtonetLoss, HandComputedTwoWayOneShot) {
  // Support (0,0) for class 0 and (2,0) for class 1; queries (0,1) of class 0, (1.5,0) of class 1.
  const at::Tensor support = at::tensor({0.0f, 0.0f, 2.0f, 0.0f}).view({2, 2});
  const at::Tensor query = at::tensor({0.0f, 1.0f, 1.5f, 0.0f}).view({2, 2});
  const at::Tensor targets = at::tensor({0, 1}, at::kLong);
  const auto r = protonet::proto_loss(support, query, targets, 2, protonet::Distance::kEuclidean);
  // Squared distances: q0 -> 1 and 5; q1 -> 2.25 and 0.25.
  const double expected = (std::log1p(std::exp(-4.0)) + std::log1p(std::exp(-2.0))) / 2;
  EXPECT_NEAR(r.loss.item<double>(), expected, 1e-6);
  EXPECT_DOUBLE_EQ(r.accuracy.item<double>(), 1.0);
  EXPECT_NEAR(r.log_probs[0][0].item<double>(), -std::log1p(std::exp(-4.0)), 1e-6);
  EXPECT_NEAR(r.log_probs[1][0].item<double>(), -2.0 - std::log1p(std::exp(-2.0)), 1e-6);

  // A wrong label: q1 called class 0.
  const auto wrong = protonet::proto_loss(support, query, at::tensor({0, 0}, at::kLong), 2,
                                          protonet::Distance::kEuclidean);
  EXPECT_DOUBLE_EQ(wrong.accuracy.item<double>(), 0.5);
  EXPECT_NEAR(wrong.loss.item<double>(), (std::log1p(std::exp(-4.0)) + 2.0 + std::log1p(std::exp(-2.0))) / 2, 1e-6);
}

TEST(ProtonetLoss, PrototypesAreSupportMeansAndCosineOption) {
  const at::Tensor support = at::tensor({1.0f, 0.0f, 3.0f, 0.0f, 0.0f, 2.0f, 0.0f, 4.0f}).view({4, 2});
  const at::Tensor p = protonet::prototypes(support, 2);
  EXPECT_TRUE(at::allclose(p, at::tensor({2.0f, 0.0f, 0.0f, 3.0f}).view({2, 2})));
  const at::Tensor q = at::tensor({5.0f, 0.0f}).view({1, 2});
  const at::Tensor cos = protonet::proto_logits(q, p, protonet::Distance::kCosine, 10.0);
  EXPECT_TRUE(at::allclose(cos, at::tensor({10.0f, 0.0f}).view({1, 2}), 1e-5, 1e-5));
  const at::Tensor euc = protonet::proto_logits(q, p, protonet::Distance::kEuclidean);
  EXPECT_TRUE(at::allclose(euc, at::tensor({-9.0f, -34.0f}).view({1, 2})));
  EXPECT_EQ(protonet::parse_distance("cosine"), protonet::Distance::kCosine);
  EXPECT_THROW(protonet::parse_distance("manhattan"), mlh::Error);
}

TEST(ProtonetModel, Conv4OutputShapes) {
  torch::NoGradGuard no_grad;
  protonet::Conv4 gray(1, 64), rgb(3, 64), narrow(1, 16);
  gray->eval();
  rgb->eval();
  narrow->eval();
  EXPECT_EQ(gray->forward(at::rand({2, 1, 28, 28})).sizes(), (at::IntArrayRef{2, 64}));
  EXPECT_EQ(rgb->forward(at::rand({2, 3, 84, 84})).sizes(), (at::IntArrayRef{2, 1600}));
  EXPECT_EQ(narrow->forward(at::rand({3, 1, 28, 28})).sizes(), (at::IntArrayRef{3, 16}));
  EXPECT_EQ(gray->embedding_dim(28, 28), 64);
  EXPECT_EQ(rgb->embedding_dim(84, 84), 1600);
}

// Two Conv-4s with the same weights: one step with and one without checkpointing give the
// same gradients and (in train mode) the same batch-norm running statistics.
void expect_checkpointing_matches(bool train_mode) {
  at::manual_seed(5);
  protonet::Conv4 plain(1, 8), checkpointed(1, 8);
  {
    torch::NoGradGuard no_grad;
    auto a = plain->named_parameters(), b = checkpointed->named_parameters();
    for (auto& item : a) b[item.key()].copy_(item.value());
    auto ab = plain->named_buffers(), bb = checkpointed->named_buffers();
    for (auto& item : ab) bb[item.key()].copy_(item.value());
  }
  plain->train(train_mode);
  checkpointed->train(train_mode);
  const at::Tensor x = at::rand({6, 1, 28, 28});
  plain->forward(x, false).pow(2).sum().backward();
  checkpointed->forward(x, true).pow(2).sum().backward();
  auto a = plain->named_parameters(), b = checkpointed->named_parameters();
  for (auto& item : a) {
    ASSERT_TRUE(b[item.key()].grad().defined()) << item.key();
    EXPECT_TRUE(at::allclose(item.value().grad(), b[item.key()].grad(), 1e-5, 1e-6)) << item.key();
  }
  auto ab = plain->named_buffers(), bb = checkpointed->named_buffers();
  for (auto& item : ab) EXPECT_TRUE(at::allclose(item.value(), bb[item.key()], 1e-6, 1e-7)) << item.key();
}

TEST(ProtonetModel, CheckpointedGradientsEqualPlainInEvalMode) { expect_checkpointing_matches(false); }
TEST(ProtonetModel, CheckpointedGradientsAndBatchNormStatsEqualPlainInTrainMode) {
  expect_checkpointing_matches(true);
}

// The "progress" of a checkpoint written before TrainProgress existed (a Fashion-MNIST run
// stopped mid-epoch by the code of commit 283c715) reads back, and writes again, as it was.
TEST(ProtonetProgress, ReadsAndWritesTheCheckpointsKeysAsTheyWere) {
  const json old = json::parse(R"({"bad_epochs":0,"best_epoch":1,"best_val_acc":0.8266666650772094,
      "best_val_loss":0.45824864506721497,"episode":102,"episode_in_epoch":2,"epoch":1,"stopped_early":false})");
  const protonet::TrainProgress p = protonet::TrainProgress::from_json(old);
  EXPECT_EQ(p.epoch, 1);
  EXPECT_EQ(p.episode_in_epoch, 2);
  EXPECT_EQ(p.episode, 102);
  ASSERT_TRUE(p.best_val_loss.has_value());
  EXPECT_DOUBLE_EQ(*p.best_val_loss, 0.45824864506721497);
  EXPECT_EQ(p.to_json(), old);
  EXPECT_EQ(p.to_json().dump(), old.dump()) << "the same text, so the same checkpoint bytes";

  // A run's start, as train() wrote it before any epoch ended.
  EXPECT_EQ(protonet::TrainProgress().to_json(),
            json::parse(R"({"epoch": 0, "episode_in_epoch": 0, "episode": 0, "best_val_loss": null,
                            "best_val_acc": null, "best_epoch": -1, "bad_epochs": 0, "stopped_early": false})"));
  EXPECT_EQ(protonet::TrainProgress::from_json(protonet::TrainProgress().to_json()).to_json(),
            protonet::TrainProgress().to_json());
}

// An epoch stopped midway keeps its sums, so that the resumed epoch's means cover all of it;
// an older checkpoint's (without them) averages what it trains after the resume.
TEST(ProtonetProgress, AnEpochStoppedMidwayKeepsItsSums) {
  protonet::TrainProgress p;
  for (const double loss : {1.0, 2.0, 3.0}) {
    p.add_episode(loss, loss / 10);
    ++p.episode_in_epoch;
  }
  protonet::TrainProgress resumed = protonet::TrainProgress::from_json(p.to_json());
  resumed.add_episode(6.0, 0.6);
  ++resumed.episode_in_epoch;
  EXPECT_DOUBLE_EQ(resumed.epoch_loss(), 3.0) << "(1 + 2 + 3 + 6) / 4";
  EXPECT_DOUBLE_EQ(resumed.epoch_acc(), 0.3);
  json old = p.to_json();
  for (const char* key : {"epoch_loss_sum", "epoch_acc_sum", "summed_from"}) old.erase(key);
  protonet::TrainProgress from_old = protonet::TrainProgress::from_json(old);
  from_old.add_episode(6.0, 0.6);
  ++from_old.episode_in_epoch;
  EXPECT_DOUBLE_EQ(from_old.epoch_loss(), 6.0) << "the episodes since the resume";
  EXPECT_TRUE(resumed.end_epoch(0.5, 0.5, 3));
  EXPECT_DOUBLE_EQ(resumed.epoch_loss(), 0.0) << "a new epoch starts its own sums";
}

TEST(ProtonetProgress, AMissingOrMistypedKeyNamesIt) {
  json progress = protonet::TrainProgress().to_json();
  progress.erase("bad_epochs");
  try {
    protonet::TrainProgress::from_json(progress);
    ADD_FAILURE() << "accepted a progress without bad_epochs";
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("progress.bad_epochs"), std::string::npos) << e.what();
  }
  progress = protonet::TrainProgress().to_json();
  progress["stopped_early"] = "no";
  EXPECT_THROW(protonet::TrainProgress::from_json(progress), mlh::Error);
}

TEST(ProtonetProgress, EpochsRecordTheBestAndStopAfterPatienceBadOnes) {
  protonet::TrainProgress p;
  p.episode_in_epoch = 5;
  EXPECT_TRUE(p.end_epoch(0.9, 0.5, 2)) << "the first epoch is the best so far";
  EXPECT_EQ(p.epoch, 1);
  EXPECT_EQ(p.episode_in_epoch, 0);
  EXPECT_EQ(p.best_epoch, 1);
  EXPECT_TRUE(p.end_epoch(0.7, 0.6, 2));
  EXPECT_EQ(p.best_epoch, 2);
  EXPECT_DOUBLE_EQ(*p.best_val_acc, 0.6);
  EXPECT_FALSE(p.end_epoch(0.8, 0.9, 2));
  EXPECT_EQ(p.bad_epochs, 1);
  EXPECT_FALSE(p.stopped_early);
  EXPECT_FALSE(p.end_epoch(0.7, 0.9, 2)) << "equal is not better";
  EXPECT_TRUE(p.stopped_early);
  EXPECT_EQ(p.epoch, 4);
  EXPECT_EQ(p.best_epoch, 2);
  EXPECT_DOUBLE_EQ(*p.best_val_loss, 0.7);
}

}  // namespace
