// The plugin through the real host: describe, a tiny train on Fashion-MNIST classes 0-4,
// eval on classes 5-9, and classify with a support folder of PNGs. Skipped without the
// Fashion-MNIST files.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stb/stb_image_write.h>

#include "algorithm_host_test.hpp"
#include "run_snapshot.hpp"
#include "test_plugins.h"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

using Result = HostResult;

Result host(const std::string& args) { return run_host(PROTONET_HOST_BIN, PROTONET_PLUGIN_DIR, args); }
// With `env` ("NAME=value ...") after the hermetic defaults, so it may replace them.
Result host_with(const std::string& env, const std::string& args) {
  return run_host(PROTONET_HOST_BIN, PROTONET_PLUGIN_DIR, args, env);
}

json read_json(const std::string& path) { return read_json_file(path); }

bool have_fashion_mnist() {
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                        "t10k-labels-idx1-ubyte.gz"})
    if (!fs::exists(std::string(PROTONET_FASHION_MNIST_DIR) + "/" + f)) return false;
  return true;
}

// A 28x28 grayscale PNG: a vertical bar (x in [10, 18)) or a horizontal one, on black.
void write_bar(const std::string& path, bool vertical, int shift) {
  std::vector<uint8_t> px(28 * 28, 0);
  for (int y = 0; y < 28; ++y)
    for (int x = 0; x < 28; ++x) {
      const int v = vertical ? x - shift : y - shift;
      if (v >= 10 && v < 18) px[y * 28 + x] = 230;
    }
  fs::create_directories(fs::path(path).parent_path());
  ASSERT_NE(stbi_write_png(path.c_str(), 28, 28, 1, px.data(), 28), 0) << path;
}

// A researcher's folder: classes of 28x28 grayscale PNGs, each class a glyph of two strokes
// (a horizontal and a vertical bar at the class's own rows and columns), each image the glyph
// shifted by up to 2 pixels with noise, so that classes the model never saw are still told
// apart by where their strokes are.
void write_glyph(const std::string& path, int cls, int image) {
  std::vector<uint8_t> px(28 * 28);
  uint32_t state = static_cast<uint32_t>(cls * 7919 + image * 104729 + 1);
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  for (auto& p : px) p = static_cast<uint8_t>(next() >> 27);  // noise 0..31
  const int dx = static_cast<int>(next() >> 29) % 5 - 2, dy = static_cast<int>(next() >> 29) % 5 - 2;
  const int row = 4 + (cls * 5) % 18, col = 4 + (cls * 11) % 18;
  for (int y = 0; y < 28; ++y)
    for (int x = 0; x < 28; ++x) {
      const bool stroke = (y - dy >= row && y - dy < row + 3) || (x - dx >= col && x - dx < col + 3);
      if (stroke) px[y * 28 + x] = 220;
    }
  fs::create_directories(fs::path(path).parent_path());
  ASSERT_NE(stbi_write_png(path.c_str(), 28, 28, 1, px.data(), 28), 0) << path;
}

// `classes` class folders of `images` glyphs each under `root`, classes numbered from `first`.
void write_glyph_folder(const std::string& root, int first, int classes, int images) {
  for (int c = first; c < first + classes; ++c)
    for (int i = 0; i < images; ++i)
      write_glyph(root + "/glyph" + std::to_string(c) + "/" + std::to_string(i) + ".png", c, i);
}

class ProtonetHost : public HostTempDirTest {
 protected:
  ProtonetHost() : HostTempDirTest("protonet-host-") {}
};

// Device choice by measurement with real plugins and workers: the cpu plugin (every core), the
// cpuset example on core 0 alone, and the fake discrete GPU (which the class rule ranks first)
// with its threads on core 0 too. The choice must follow the figures: the fastest measured,
// unless the class rule's first (the fake GPU) is within the margin of it. Which device is
// fastest depends on what else runs beside the test (idle, the cpu plugin's two cores win), so
// the test checks the choice against the measured figures, never the figures themselves. The
// next run takes the figures from the cache; a GPU whose worker fails (an XPU torch device this
// LibTorch cannot run) is ranked last, saying why.
TEST_F(ProtonetHost, ARunTimesItsStepOnEachDeviceAndTakesTheFastest) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one core: every device here is the same core";
  // The cpu plugin is in the protonet plugin's folder.
  const std::string devices =
      std::string("--plugin-dir ") + MLH_TEST_PLUGIN_DIR("good-gpu") + " --plugin-dir " + MLH_TEST_PLUGIN_DIR("cpuset");
  // The thread count is the plan's for each device (2 for the cpu and fakegpu, 1 for cpuset);
  // the allocator and precision fixed leave the chosen device nothing to calibrate after.
  // 10-way episodes of all ten classes: the default is 5-way (the five default training
  // classes), where two cores gain less.
  const std::string run = "--algorithm protonet --command calibrate --allocator glibc --precision fp32 --set preset=reduced "
                          "--set train_way=10 --set data.train_classes=[0,1,2,3,4,5,6,7,8,9] " + devices;
  const std::string measuring = "MLH_NO_CALIBRATE=0 MLH_CPUSET=0 MLH_FAKEGPU_CORES=0";
  auto reasons = [&](const std::string& run_dir) {
    const json probe = read_json(run_dir + "/probe.json");
    json by_id = json::object();
    for (const json& d : probe["devices"]) by_id[d["id"].get<std::string>()] = d;
    return by_id;
  };

  // The device the figures call for: the fastest measured, unless the fake GPU, first by
  // class, is within the 3% margin of it.
  auto implied_choice = [](const json& devices) {
    std::string fastest;
    double best = 0, gpu = 0;
    for (const json& d : devices) {
      const double t = d.value("throughput", 0.0);
      if (t > best) best = t, fastest = d["device"].get<std::string>();
      if (d["device"] == "fakegpu:0") gpu = t;
    }
    return best < gpu * 1.03 ? std::string("fakegpu:0") : fastest;
  };

  const Result first = host_with(measuring, run + " --run-dir " + dir_ + "/first");
  ASSERT_EQ(first.rc, 0) << first.output;
  EXPECT_NE(first.output.find("timing protonet's training step on each of 3 devices"), std::string::npos) << first.output;
  const json plan = read_json(dir_ + "/first/plan.json");
  EXPECT_EQ(plan["device_choice"]["rule"], "measured");
  ASSERT_EQ(plan["device_choice"]["devices"].size(), 3u);
  for (const json& d : plan["device_choice"]["devices"]) EXPECT_GT(d.value("throughput", 0.0), 0) << d.dump();
  const std::string chosen = implied_choice(plan["device_choice"]["devices"]);
  EXPECT_EQ(plan["device"], chosen) << plan["device_choice"].dump(2);
  json ranked = reasons(dir_ + "/first");
  EXPECT_EQ(ranked[chosen]["rank"], 1);
  const std::string why = ranked[chosen]["reason"];
  EXPECT_TRUE(why.rfind("fastest measured: ", 0) == 0 || why.rfind("first by device class; the figures are within", 0) == 0)
      << ranked.dump(2);
  for (const char* other : {"cpu:0", "cpuset:0", "fakegpu:0"})
    if (other != chosen) EXPECT_EQ(ranked[other]["reason"].get<std::string>().rfind("slower: ", 0), 0u) << ranked.dump(2);
  EXPECT_NE(first.output.find("device: " + chosen + " ("), std::string::npos) << first.output;

  // The plan of the same run reads the figures from the cache, measuring nothing.
  const Result plan_again = host_with(measuring, run + " --print-plan");
  ASSERT_EQ(plan_again.rc, 0) << plan_again.output;
  EXPECT_EQ(plan_again.output.find("timing protonet's training step"), std::string::npos) << plan_again.output;
  EXPECT_NE(plan_again.output.find("Plan for " + chosen), std::string::npos) << plan_again.output;
  EXPECT_NE(plan_again.output.find("device choice            " + chosen + " by "), std::string::npos)
      << plan_again.output;

  // A second run: the cpu's and cpuset's figures from the cache, the fake GPU (now another
  // torch device, so another worker) measured and failing.
  const Result failing = host_with("MLH_NO_CALIBRATE=0 MLH_CPUSET=0 MLH_FAKEGPU_TORCH_DEVICE=xpu:0",
                                   run + " --run-dir " + dir_ + "/failing");
  ASSERT_EQ(failing.rc, 0) << failing.output;
  const json choice = read_json(dir_ + "/failing/plan.json")["device_choice"];
  ASSERT_EQ(choice["devices"].size(), 3u) << choice.dump(2);
  auto figure_of = [](const json& devices, const std::string& id) {
    for (const json& d : devices)
      if (d["device"] == id) return d;
    return json();
  };
  for (const char* id : {"cpu:0", "cpuset:0"}) {
    const json now = figure_of(choice["devices"], id), before = figure_of(plan["device_choice"]["devices"], id);
    EXPECT_NE(now["measured"], "now") << id << " taken from the cache: " << choice.dump(2);
    EXPECT_EQ(now["throughput"], before["throughput"]) << id;
  }
  ranked = reasons(dir_ + "/failing");
  EXPECT_EQ(ranked[implied_choice(choice["devices"])]["rank"], 1) << ranked.dump(2);  // the faster CPU device
  EXPECT_EQ(ranked["fakegpu:0"]["rank"], 3) << ranked.dump(2);
  EXPECT_NE(ranked["fakegpu:0"]["reason"].get<std::string>().find("not measured: "), std::string::npos) << ranked.dump(2);
  EXPECT_NE(ranked["fakegpu:0"]["reason"].get<std::string>().find("XPU"), std::string::npos) << ranked.dump(2);
}

TEST_F(ProtonetHost, Describe) {
  const Result r = host("--describe protonet --json");
  ASSERT_EQ(r.rc, 0) << r.output;
  const json d = json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(d["commands"], json({"train", "eval", "classify", "forward", "benchmark", "calibrate"}));
  EXPECT_EQ(d["config_defaults"]["data"]["format"], "idx");
}

// The plan names the model the config builds: a preset's "$parameters" is Conv-4's (its
// default encoder), and with model.encoder resnet12 the plan's model line, from the plugin's
// describe_run, is ResNet-12's. Refusals name the field.
TEST_F(ProtonetHost, ThePlanNamesTheEncoderThePresetAndConfigBuild) {
  const Result conv4 = host("--print-plan --algorithm protonet --device cpu --set preset=miniimagenet-5shot");
  ASSERT_EQ(conv4.rc, 0) << conv4.output;
  EXPECT_NE(conv4.output.find("Conv-4: 4 blocks x 64 channels, 84x84x3 images to 1600-d embeddings, 113,088 parameters"),
            std::string::npos) << conv4.output;
  const Result resnet = host("--print-plan --algorithm protonet --device cpu --set preset=miniimagenet-5shot "
                             "--set model.encoder=resnet12");
  ASSERT_EQ(resnet.rc, 0) << resnet.output;
  EXPECT_NE(resnet.output.find("ResNet-12: 4 residual stages of 64-160-320-640 channels, 84x84x3 images to 640-d "
                               "embeddings, 12,424,320 parameters"),
            std::string::npos) << resnet.output;
  const Result odd = host("--print-plan --algorithm protonet --device cpu --set model.encoder=resnet12 --set width=63");
  EXPECT_NE(odd.rc, 0);
  EXPECT_NE(odd.output.find("config field 'width': 63"), std::string::npos) << odd.output;
  const Result unknown = host("--print-plan --algorithm protonet --device cpu --set model.encoder=vgg");
  EXPECT_NE(unknown.rc, 0);
  EXPECT_NE(unknown.output.find("'model.encoder'"), std::string::npos) << unknown.output;
}

// Data files given relative at training are recorded absolute (config.json), from the folder
// the command was given in: the trained run evaluates from any other folder.
TEST_F(ProtonetHost, RelativeDataPathsHoldWhenTheRunIsEvaluatedFromAnotherFolder) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "no Fashion-MNIST in " << PROTONET_FASHION_MNIST_DIR;
  const std::string work = dir_ + "/work", elsewhere = dir_ + "/elsewhere";
  fs::create_directories(work + "/data");
  fs::create_directories(elsewhere);
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                        "t10k-labels-idx1-ubyte.gz"})
    fs::create_symlink(std::string(PROTONET_FASHION_MNIST_DIR) + "/" + f, work + "/data/" + f);
  const Result train =
      run_host(PROTONET_HOST_BIN, PROTONET_PLUGIN_DIR,
               "--algorithm protonet --device cpu --run-dir run --set epochs=1 --set episodes_per_epoch=3"
               " --set val_episodes=2 --set width=16 --set data.root=data/train-images-idx3-ubyte.gz"
               " --set data.labels=./data/train-labels-idx1-ubyte.gz --set data.test_root=data/t10k-images-idx3-ubyte.gz"
               " --set data.test_labels=data/../data/t10k-labels-idx1-ubyte.gz",
               "", work);
  ASSERT_EQ(train.rc, 0) << train.output;
  const json config = read_json(work + "/run/config.json");
  EXPECT_EQ(config["data"]["root"], work + "/data/train-images-idx3-ubyte.gz") << config.dump(2);
  EXPECT_EQ(config["data"]["labels"], work + "/data/train-labels-idx1-ubyte.gz") << config.dump(2);
  EXPECT_EQ(config["data"]["test_labels"], work + "/data/t10k-labels-idx1-ubyte.gz") << config.dump(2);

  const Result eval = run_host(PROTONET_HOST_BIN, PROTONET_PLUGIN_DIR,
                               "--algorithm protonet --resume --run-dir ../work/run --command eval"
                               " --set eval_episodes=10",
                               "", elsewhere);
  ASSERT_EQ(eval.rc, 0) << eval.output;
  EXPECT_TRUE(fs::exists(work + "/run/commands/eval-1/summary.json"));
}

TEST_F(ProtonetHost, TrainEvalClassifyOnFashionMnist) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "no Fashion-MNIST in " << PROTONET_FASHION_MNIST_DIR;
  const std::string run = dir_ + "/run";
  const std::string common = " --device cpu --run-dir " + run +
                             " --set epochs=2 --set episodes_per_epoch=6 --set val_episodes=5 --set train_way=5"
                             " --set width=32 --set eval_episodes=30";
  const Result train = host("--algorithm protonet" + common);
  ASSERT_EQ(train.rc, 0) << train.output;
  const json ts = read_json(run + "/summary.json");
  EXPECT_EQ(ts["status"], "completed");
  EXPECT_EQ(ts["result"]["episodes"], 12);
  EXPECT_TRUE(ts["last_metrics"].contains("val/acc"));
  EXPECT_TRUE(fs::exists(run + "/model.safetensors"));

  const auto trained = training_files(run);
  const Result eval = host("--algorithm protonet --command eval --resume" + common);
  ASSERT_EQ(eval.rc, 0) << eval.output;
  const json es = read_json(run + "/commands/eval-1/summary.json");
  // 5-way on the unseen classes 5-9: chance is 0.2.
  EXPECT_GT(es["result"]["accuracy"].get<double>(), 0.4) << es.dump();
  EXPECT_NE(eval.output.find("(95% CI)"), std::string::npos);

  // classify: two classes of bars; the queries are new bars of each.
  for (int i = 0; i < 3; ++i) {
    write_bar(dir_ + "/support/vertical/" + std::to_string(i) + ".png", true, i - 1);
    write_bar(dir_ + "/support/horizontal/" + std::to_string(i) + ".png", false, i - 1);
  }
  write_bar(dir_ + "/query/a.png", true, 2);
  write_bar(dir_ + "/query/b.png", false, -2);
  const Result cls = host("--algorithm protonet --command classify --resume" + common + " --set support_dir=" + dir_ +
                          "/support --set query=" + dir_ + "/query");
  ASSERT_EQ(cls.rc, 0) << cls.output;
  const json cs = read_json(run + "/commands/classify-1/summary.json");
  EXPECT_EQ(changed_files(trained, training_files(run)), "");
  const json& p = cs["result"]["predictions"];
  ASSERT_EQ(p.size(), 2u) << cs.dump();
  EXPECT_EQ(p[0]["class"], "vertical") << cs.dump();
  EXPECT_EQ(p[1]["class"], "horizontal") << cs.dump();
  EXPECT_NEAR(p[0]["probabilities"]["vertical"].get<double>() + p[0]["probabilities"]["horizontal"].get<double>(), 1.0,
              1e-5);
  EXPECT_NE(cls.output.find("a.png: vertical"), std::string::npos) << cls.output;
}

// An Omniglot-layout folder: 12 characters of 8 images each (strokes: bars at their own
// place), split files for train (6 characters), val (2) and test (4) in <dir>/lists.
void write_small_omniglot(const std::string& dir) {
  std::string train, val, test;
  for (int c = 0; c < 12; ++c) {
    const std::string key = "Alpha/character" + std::to_string(10 + c);
    for (int i = 0; i < 8; ++i)
      write_bar(dir + "/images_background/" + key + "/" + std::to_string(i) + ".png", c % 2 == 0, c - 6 + i % 3 - 1);
    (c < 6 ? train : c < 8 ? val : test) += key + "/rot000\n";
  }
  std::ofstream(dir + "/lists/train.txt") << train;
  std::ofstream(dir + "/lists/val.txt") << val;
  std::ofstream(dir + "/lists/test.txt") << test;
}

// The issue a user hit: Omniglot without split files trained and tested on every character.
// Now the run is refused before anything is written, with the way out; split lists from a
// folder train and test through the real host; the reference presets carry the protocol.
TEST_F(ProtonetHost, OmniglotTestsOnlyClassesItDidNotTrainOn) {
  const std::string data = dir_ + "/omniglot";
  fs::create_directories(data + "/lists");
  write_small_omniglot(data);
  const std::string small = " --device cpu --set data.format=omniglot --set data.root=" + data +
                            " --set train_way=3 --set train_shot=2 --set train_query=2 --set test_way=2"
                            " --set test_shot=2 --set test_query=3 --set epochs=1 --set episodes_per_epoch=4"
                            " --set val_episodes=2 --set eval_episodes=10 --set width=16";

  const std::string refused_run = dir_ + "/refused";
  const Result refused = host("--algorithm protonet --run-dir " + refused_run + small);
  EXPECT_NE(refused.rc, 0) << refused.output;
  EXPECT_NE(refused.output.find("of the 12 validation classes are training classes"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("data.splits=vinyals"), std::string::npos) << refused.output;
  EXPECT_FALSE(fs::exists(refused_run + "/checkpoints")) << "nothing trained";
  EXPECT_FALSE(fs::exists(refused_run + "/model.safetensors"));

  const std::string run = dir_ + "/run";
  const std::string with_splits = small + " --set data.splits=" + data + "/lists --run-dir " + run;
  const Result train = host("--algorithm protonet" + with_splits);
  ASSERT_EQ(train.rc, 0) << train.output;
  EXPECT_NE(train.output.find("images of 6 classes"), std::string::npos) << train.output;
  const Result eval = host("--algorithm protonet --command eval --resume" + with_splits);
  ASSERT_EQ(eval.rc, 0) << eval.output;
  EXPECT_EQ(read_json(run + "/commands/eval-1/summary.json")["result"]["way"], 2);

  // A split file naming a character that is not there: the file, the line, the character.
  std::ofstream(data + "/lists/test.txt", std::ios::app) << "Alpha/character99/rot000\n";
  const Result missing = host("--algorithm protonet --command eval --resume" + with_splits);
  EXPECT_NE(missing.rc, 0);
  EXPECT_NE(missing.output.find(data + "/lists/test.txt' line 5: character folder"), std::string::npos)
      << missing.output;
  EXPECT_NE(missing.output.find("Alpha/character99"), std::string::npos) << missing.output;

  // The reference's protocol as a preset: the plan's config shows it.
  const Result plan = host("--print-plan --algorithm protonet --device cpu --set preset=omniglot-5shot");
  ASSERT_EQ(plan.rc, 0) << plan.output;
  for (const char* field : {"\"splits\": \"vinyals\"", "\"train_way\": 60", "\"patience\": 201",
                            "\"eval_episodes\": 1000", "\"invert\": true"})
    EXPECT_NE(plan.output.find(field), std::string::npos) << field << " not in:\n" << plan.output;
}

// Plan fields checked from inside the worker (docs/plan.md, "What each field does"):
// channels-last converts Conv-4's weights, a data worker assembles the episodes, gradient
// checkpointing recomputes the blocks, --max-steps ends the epoch early and validates it.
TEST_F(ProtonetHost, PlanFieldsTakeEffectInTheWorker) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "no Fashion-MNIST in " << PROTONET_FASHION_MNIST_DIR;
  write_text_file(dir_ + "/hw.ini", "channels_last = true\ndataloader_workers = 1\ngradient_checkpointing = true\n");
  const std::string run = dir_ + "/run";
  const Result train = host("--algorithm protonet --device cpu --hardware-config " + dir_ + "/hw.ini --run-dir " + run +
                            " --set epochs=3 --set episodes_per_epoch=50 --max-steps 4 --set val_episodes=2"
                            " --set train_way=5 --set width=16");
  ASSERT_EQ(train.rc, 0) << train.output;
  const json result = read_json_file(run + "/summary.json")["result"];
  EXPECT_EQ(result["episodes"], 4) << result.dump(2);
  EXPECT_EQ(result["epochs"], 1) << "the epoch --max-steps ended is validated and counted: " << result.dump(2);
  EXPECT_EQ(result["max_steps"], 4) << result.dump(2);
  EXPECT_TRUE(fs::exists(run + "/model.safetensors"));
  const json applied = plan_applied(run);
  EXPECT_EQ(applied["channels_last"]["tensors_converted"], 4) << "the four convolutions' weights: " << applied.dump(2);
  EXPECT_EQ(applied["dataloader_workers"]["threads"], 1) << applied.dump(2);
  EXPECT_GE(applied["dataloader_workers"]["batches_by_workers"].get<int64_t>(), 4 + 2) << applied.dump(2);
  EXPECT_GE(applied["gradient_checkpointing"]["checkpointed_calls"].get<int64_t>(), 4 * 4) << applied.dump(2);
  const json plan = read_json_file(run + "/plan.json");
  EXPECT_EQ(plan["model"]["parameters"], read_json_file(run + "/summary.json")["result"]["parameters"]) << plan.dump(2);
  EXPECT_FALSE(plan["no_effect"].contains("channels_last")) << plan["no_effect"].dump(2);
}

// ProtoNet's batch is the episode: a batch size on the command line is refused before
// anything runs, naming the option and why; from the rules it is only marked.
TEST_F(ProtonetHost, BatchSizeOnTheCommandLineIsRefused) {
  const std::string run = dir_ + "/run";
  const Result r = host("--algorithm protonet --device cpu --batch-size 64 --run-dir " + run);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("--batch-size 64: protonet's batch is the episode"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(run)) << "nothing is written";
  const Result plan = host("--print-plan --algorithm protonet --device cpu");
  ASSERT_EQ(plan.rc, 0) << plan.output;
  EXPECT_NE(plan.output.find("256 (no effect: protonet's batch is the episode"), std::string::npos) << plan.output;
}

// Resident memory stays bounded under the plan's allocator (jemalloc by default, which keeps
// freed blocks for reuse instead of returning them after every step): over a few hundred
// training episodes the worker's resident memory, sampled every second into telemetry.jsonl,
// levels off after the first episodes instead of growing.
TEST_F(ProtonetHost, ResidentMemoryPlateausOverALongRun) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "no Fashion-MNIST in " << PROTONET_FASHION_MNIST_DIR;
  const std::string run = dir_ + "/long";
  const Result train = host("--algorithm protonet --device cpu --run-dir " + run +
                            " --set epochs=1 --set episodes_per_epoch=300 --set val_episodes=5 --set train_way=5"
                            " --set train_shot=5 --set train_query=15");
  ASSERT_EQ(train.rc, 0) << train.output;
  // The training episodes alone: the epoch ends (its train/loss, seconds since the worker
  // started) before the validation, the checkpoint and the export, whose buffers are not growth.
  double trained_by = 0;
  std::ifstream metrics(run + "/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const json m = json::parse(line, nullptr, false);
    if (m.is_object() && m.value("name", "") == "train/loss") trained_by = m.value("time", 0.0);
  }
  ASSERT_GT(trained_by, 0) << "no train/loss in metrics.jsonl";
  std::vector<double> rss;
  std::ifstream telemetry(run + "/telemetry.jsonl");
  for (std::string line; std::getline(telemetry, line);) {
    const json sample = json::parse(line, nullptr, false);
    if (sample.is_object() && sample.contains("memory_used_bytes") && sample.value("time", 0.0) <= trained_by)
      rss.push_back(sample["memory_used_bytes"].get<double>());
  }
  ASSERT_GE(rss.size(), 9u) << "too few telemetry samples for a trend: " << rss.size();
  // Thirds after the start-up (LibTorch, data, the first episodes' allocations).
  const size_t third = rss.size() / 3;
  const double middle = *std::max_element(rss.begin() + third, rss.begin() + 2 * third);
  const double last = *std::max_element(rss.begin() + 2 * third, rss.end());
  EXPECT_LE(last, middle * 1.05 + 16.0 * (1 << 20))
      << "resident memory still grows: " << middle / (1 << 20) << " MiB then " << last / (1 << 20) << " MiB";
  // The metrics show it too (the runtime's MemoryMonitor).
  bool metric = false;
  std::ifstream all_metrics(run + "/metrics.jsonl");
  for (std::string line; std::getline(all_metrics, line);)
    metric = metric || line.find("memory/rss_bytes") != std::string::npos;
  EXPECT_TRUE(metric) << "no memory/rss_bytes metric";
  const json worker = read_json(run + "/summary.json")["worker"];
  if (read_json(run + "/plan.json")["allocator"]["name"] == "jemalloc") {
    EXPECT_EQ(worker["allocator"], "jemalloc");
  }
}

// Two CPU ranks (Gloo), each on its own episodes: the networks stay identical, the
// validation figures are the ranks' mean, and the result still learns.
TEST_F(ProtonetHost, TwoRanksTrainInLockstep) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "no Fashion-MNIST in " << PROTONET_FASHION_MNIST_DIR;
  const std::string run = dir_ + "/run2";
  const std::string common = " --device cpu --run-dir " + run +
                             " --set epochs=2 --set episodes_per_epoch=6 --set val_episodes=5 --set train_way=5"
                             " --set width=32 --set eval_episodes=30";
  const Result train = host("--algorithm protonet --nproc-per-node 2" + common);
  ASSERT_EQ(train.rc, 0) << train.output;
  const json s = read_json(run + "/summary.json"), s1 = read_json(run + "/ranks/1/summary.json");
  EXPECT_EQ(s["status"], "completed") << s.dump();
  EXPECT_EQ(s["result"]["world_size"], 2);
  EXPECT_EQ(s["result"]["ranks_agree"], true) << s.dump();
  EXPECT_EQ(s1["result"]["ranks_agree"], true) << s1.dump();
  EXPECT_EQ(s["result"]["best_val_loss"], s1["result"]["best_val_loss"]);
  const Result eval = host("--algorithm protonet --command eval --resume" + common);
  ASSERT_EQ(eval.rc, 0) << eval.output;
  EXPECT_GT(read_json(run + "/commands/eval-1/summary.json")["result"]["accuracy"].get<double>(), 0.4);
}

// The docs' own-images example at an ordinary size: 12 classes of 20 images, 8 to train on and
// 4 unseen to test on, with the docs' commands (and a short schedule). The episodes and the
// validation share are fitted to the data, saying so, and the test on the unseen classes is far
// above chance (4-way: 25%).
TEST_F(ProtonetHost, AFolderOfTwelveClassesOfTwentyImagesTrainsAndTestsOnTheUnseenOnes) {
  write_glyph_folder(dir_ + "/my/train", 0, 8, 20);
  write_glyph_folder(dir_ + "/my/test", 8, 4, 20);
  write_text_file(dir_ + "/my/train/glyph0/notes.txt", "where these came from");
  const std::string run = dir_ + "/runs/mine";
  const std::string data = " --set data.format=folder --set data.root=" + dir_ + "/my/train --set data.test_root=" +
                           dir_ + "/my/test";
  const Result train = host("--algorithm protonet --device cpu --run-dir " + run + data +
                            " --set epochs=4 --set episodes_per_epoch=25 --set val_episodes=10");
  ASSERT_EQ(train.rc, 0) << train.output;
  for (const char* said : {"validation: data.val_fraction 0.10 would hold out 2 of a class's 20 images",
                           "validation episodes: 1-query, not the 15-query test_query asks", "training 5-way 5-shot"})
    EXPECT_NE(train.output.find(said), std::string::npos) << said << "\n" << train.output;
  // What the run reads is said before it reads it: the file it skips (a warning), and the images'
  // stored and read size (information: no conversion here).
  EXPECT_NE(train.output.find("[warning] training data '" + dir_ + "/my/train': 1 file is not a .png/.jpg/.jpeg image "
                              "and is skipped: '" + dir_ + "/my/train/glyph0/notes.txt'"),
            std::string::npos)
      << train.output;
  EXPECT_NE(train.output.find("[info] training data '" + dir_ + "/my/train': 160 images (160 at 28x28 grayscale), "
                              "read as 28x28 grayscale"),
            std::string::npos)
      << train.output;
  // Each default fitted to the data is one warning naming the field.
  EXPECT_NE(train.output.find("[warning] validation episodes: 1-query, not the 15-query test_query asks"), std::string::npos)
      << train.output;

  const Result eval = host("--algorithm protonet --device cpu --run-dir " + run + " --resume --command eval" + data +
                           " --set eval_episodes=40");
  ASSERT_EQ(eval.rc, 0) << eval.output;
  EXPECT_NE(eval.output.find("test episodes: 4-way, not the 5-way test_way asks"), std::string::npos) << eval.output;
  const json result = read_json(run + "/commands/eval-1/summary.json")["result"];
  EXPECT_EQ(result["way"], 4);
  EXPECT_GT(result["accuracy"].get<double>(), 0.6) << result.dump();

  // A way the user asks for is never changed under them: the test set's 4 classes cannot give
  // 5-way episodes, so the command is refused naming the field, and leaves no folder.
  const Result asked = host("--algorithm protonet --device cpu --run-dir " + run + " --resume --command eval" + data +
                            " --set eval_episodes=40 --set test_way=5");
  EXPECT_EQ(asked.rc, 2) << asked.output;
  EXPECT_NE(asked.output.find("config field 'test_way' was set, and the data cannot give it: test episodes: 4-way"),
            std::string::npos)
      << asked.output;
  EXPECT_FALSE(fs::exists(run + "/commands/eval-2")) << asked.output;
}

// Every bad data file is refused the same way, whichever it is and wherever it lies: exit 2,
// the message naming the file and what is wrong, and no run folder left behind.
TEST_F(ProtonetHost, BadImageFilesAreRefusedNamingTheFileAndLeaveNoRunFolder) {
  write_glyph_folder(dir_ + "/good/train", 0, 4, 8);
  write_glyph_folder(dir_ + "/good/test", 4, 3, 8);
  auto refused = [&](const std::string& case_name, const std::string& train, const std::string& test,
                     const std::string& named, const std::string& extra = "") {
    SCOPED_TRACE(case_name);
    const std::string run = dir_ + "/runs/" + case_name;
    const Result r = host("--algorithm protonet --device cpu --run-dir " + run +
                          " --set data.format=folder --set data.root=" + train + " --set data.test_root=" + test +
                          " --set epochs=1 --set episodes_per_epoch=2" + extra);
    EXPECT_EQ(r.rc, 2) << r.output;
    EXPECT_NE(r.output.find(named), std::string::npos) << "names " << named << "\n" << r.output;
    EXPECT_EQ(r.output.find("training failed: "), std::string::npos) << "said once, by the host\n" << r.output;
    EXPECT_FALSE(fs::exists(run)) << "a run folder was left behind";
  };

  // A truncated PNG among the training images.
  auto copy_folder = [](const std::string& from, const std::string& to) {
    fs::create_directories(fs::path(to).parent_path());
    fs::copy(from, to, fs::copy_options::recursive);
  };
  copy_folder(dir_ + "/good/train", dir_ + "/truncated/train");
  const std::string cut = dir_ + "/truncated/train/glyph1/3.png";
  fs::resize_file(cut, fs::file_size(cut) / 2);
  refused("truncated", dir_ + "/truncated/train", dir_ + "/good/test", cut);

  // An empty class folder.
  copy_folder(dir_ + "/good/train", dir_ + "/empty/train");
  fs::create_directories(dir_ + "/empty/train/glyph9");
  refused("empty-class", dir_ + "/empty/train", dir_ + "/good/test", dir_ + "/empty/train/glyph9");

  // Bytes that are not an image, in the test folder: training reads the test data first.
  copy_folder(dir_ + "/good/test", dir_ + "/notimage/test");
  write_text_file(dir_ + "/notimage/test/glyph5/bad.png", "not a PNG at all");
  refused("bad-test-image", dir_ + "/good/train", dir_ + "/notimage/test", dir_ + "/notimage/test/glyph5/bad.png");

  // A training folder that does not exist.
  refused("missing", dir_ + "/nowhere", dir_ + "/good/test", dir_ + "/nowhere");

  // data.strict takes the data exactly as configured: a file that is not an image (skipped
  // otherwise, with a warning) is refused, in the test folder too, at training...
  copy_folder(dir_ + "/good/test", dir_ + "/notes/test");
  write_text_file(dir_ + "/notes/test/glyph4/notes.txt", "about this class");
  refused("strict-notes", dir_ + "/good/train", dir_ + "/notes/test",
          "test data '" + dir_ + "/notes/test': 1 file is not a .png/.jpg/.jpeg image ('" + dir_ +
              "/notes/test/glyph4/notes.txt'); data.strict refuses files that are not images",
          " --set data.strict=true");
  // ... and so is a default the data cannot give (4 training classes, 5-way by default).
  refused("strict-way", dir_ + "/good/train", dir_ + "/good/test",
          "training episodes: 4-way, not the 5-way train_way asks", " --set data.strict=true");
}

// A user's PyTorch encoder that fails in the middle of training, through the real host: an
// exception is bad input (exit 2) naming the file, the class and the line, in the terminal and
// in log.txt, and the run keeps what it wrote; a crash (a signal in Python's ctypes) prints the
// Python stack with the user's file and line on the worker's stderr before the worker's crash
// report, which names the library and how far the run got there and in log.txt.
TEST_F(ProtonetHost, APythonEncoderFailingMidRunIsNamedByItsFileAndLine) {
  if (std::string(PROTONET_PYTHON_BRIDGE).empty()) GTEST_SKIP() << "this build has no Python bridge";
  write_glyph_folder(dir_ + "/train", 0, 5, 20);
  write_glyph_folder(dir_ + "/test", 5, 5, 10);
  const std::string module = dir_ + "/failing.py";
  write_text_file(module,
                  "import ctypes\nfrom torch import nn\n\n\nclass Failing(nn.Module):\n"
                  "    def __init__(self, in_channels, crash=False):\n        super().__init__()\n"
                  "        self.conv = nn.Conv2d(in_channels, 4, 3)\n        self.crash, self.calls = crash, 0\n\n"
                  "    def forward(self, images):\n        self.calls += 1\n        if self.calls > 12 and self.crash:\n"
                  "            ctypes.string_at(0)\n        if self.calls > 12:\n"
                  "            raise RuntimeError('gave up')\n        return self.conv(images).flatten(1)\n");
  auto train = [&](const std::string& name, bool crash) {
    return host("--algorithm protonet --device cpu --run-dir " + dir_ + "/" + name +
                " --set data.format=folder --set data.root=" + dir_ + "/train --set data.test_root=" + dir_ +
                "/test --set epochs=2 --set episodes_per_epoch=10 --set model.encoder=python --set model.module=" +
                module + ":Failing --set 'model.kwargs={\"crash\": " + (crash ? "true" : "false") + "}'");
  };
  const Result raised = train("raises", false);
  EXPECT_EQ(raised.rc, 2) << raised.output;
  const std::string named = module + ":Failing: forward raised RuntimeError: gave up (failing.py, line 16: raise RuntimeError('gave up'))";
  EXPECT_NE(raised.output.find(named), std::string::npos) << raised.output;
  EXPECT_NE(read_text_file(dir_ + "/raises/log.txt").find(named), std::string::npos);

  const Result crashed = train("crashes", true);
  EXPECT_NE(crashed.rc, 0) << crashed.output;
  const std::string stack = std::string("File \"") + module + "\", line 14 in forward";
  const std::string report = "[worker crash] signal 11 (Segmentation fault) in ";
  EXPECT_NE(crashed.output.find(stack), std::string::npos) << crashed.output;
  EXPECT_NE(crashed.output.find(report), std::string::npos) << crashed.output;
  EXPECT_LT(crashed.output.find(stack), crashed.output.find(report)) << "the Python stack comes first";
  EXPECT_NE(read_text_file(dir_ + "/crashes/log.txt").find(report), std::string::npos);
}

}  // namespace
