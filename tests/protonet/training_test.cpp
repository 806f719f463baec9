// ProtoNet's commands through a fake host on in-memory data: a short training run on an
// easy synthetic set learns (validation accuracy well above chance), stopping mid-epoch
// saves a checkpoint from which a resumed run ends where an uninterrupted one does, and
// eval reports an accuracy with a confidence interval.
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/safetensors.hpp>
#include <nlohmann/json.hpp>

#include "blob_runs.hpp"
#include "commands.hpp"
#include "fake_host.hpp"
#include "temp_dir.hpp"

namespace {

using nlohmann::json;
using protonet::ImageSet;
using namespace protonet_test;
namespace fs = std::filesystem;

TEST(ProtonetTraining, LearnsAnEasySetAndEvaluates) {
  TempDir dir;
  FakeHost host;
  std::string error;
  ASSERT_EQ(run(host, "train", small_config(), dir.path(), false, &error), MLH_OK) << error;
  const json summary = json::parse(host.summary);
  ASSERT_EQ(host.metrics["val/acc"].size(), 3u);
  ASSERT_EQ(host.metrics["train/loss"].size(), 3u);
  // 4-way validation: chance is 0.25.
  EXPECT_GT(summary["best_val_acc"].get<double>(), 0.7) << host.summary;
  EXPECT_LT(host.metrics["train/loss"].back(), host.metrics["train/loss"].front());
  EXPECT_EQ(summary["episodes"], 24);
  EXPECT_EQ(host.progress, 24);
  EXPECT_TRUE(fs::exists(dir.str() + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(dir.str() + "/checkpoints/best.ckpt"));
  const auto weights = mlh::rt::load_safetensors(dir.str() + "/model.safetensors");
  EXPECT_EQ(weights.at("block0_conv.weight").sizes(), (at::IntArrayRef{16, 1, 3, 3}));

  // eval: unseen classes 8-11, 4-way, on the best checkpoint.
  FakeHost eval_host;
  ASSERT_EQ(run(eval_host, "eval", small_config(), dir.path(), false, &error), MLH_OK) << error;
  const json result = json::parse(eval_host.summary);
  EXPECT_GT(result["accuracy"].get<double>(), 0.5) << eval_host.summary;
  EXPECT_GT(result["ci95"].get<double>(), 0.0);
  EXPECT_LT(result["ci95"].get<double>(), 0.2);
  EXPECT_EQ(eval_host.progress, 40);
}

// An episode's 15 queries in micro-batches of 4 (what an out-of-memory back-off leads to):
// each micro-batch embeds the support set again, the weighted losses add up to the
// episode's, and the run learns as well.
TEST(ProtonetTraining, QueriesInMicroBatchesLearnTooAndTheMicroBatchIsCheckpointed) {
  TempDir dir;
  FakeHost host;
  json config = small_config();
  config["micro_batch"] = 4;
  std::string error;
  ASSERT_EQ(run(host, "train", config, dir.path(), false, &error), MLH_OK) << error;
  const json summary = json::parse(host.summary);
  EXPECT_EQ(summary["query_micro_batch"], 4) << host.summary;
  EXPECT_EQ(summary["oom_backoffs"], 0) << host.summary;
  EXPECT_GT(summary["best_val_acc"].get<double>(), 0.7) << host.summary;
  EXPECT_LT(host.metrics["train/loss"].back(), host.metrics["train/loss"].front());
  // The train loss is the episodes' (weighted micro-batch losses added up), not a part's.
  EXPECT_GT(host.metrics["train/loss"].front(), 0.3) << "the first epoch's loss looks like one micro-batch's share";

  config["micro_batch"] = -1;
  FakeHost bad;
  EXPECT_EQ(run(bad, "train", config, dir.str() + "/bad", false, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("micro_batch"), std::string::npos) << error;
}

TEST(ProtonetTraining, WayIsFittedToTheClassesAvailableAndSaysSo) {
  TempDir dir;
  FakeHost host;
  json config = small_config();
  config["train_way"] = 60;
  config["epochs"] = 1;
  config["episodes_per_epoch"] = 2;
  std::string error;
  ASSERT_EQ(run(host, "train", config, dir.path(), false, &error), MLH_OK) << error;
  EXPECT_EQ(json::parse(host.summary)["train_episode"]["way"], 8);
  bool said = false;
  for (const auto& l : host.logs)
    said = said || l.find("training episodes: 8-way, not the 60-way train_way asks") != std::string::npos;
  EXPECT_TRUE(said);
}

// A test on classes the model was trained on is refused before anything trains, naming the
// shared classes and the ways out; data.allow_class_overlap lets it run with a warning. Eval
// makes the same check against the run's training classes.
TEST(ProtonetTraining, TestClassesThatWereTrainedOnAreRefusedUnlessAllowed) {
  TempDir dir;
  json config = small_config();
  config["data"]["test_classes"] = {6, 7, 8, 9};  // 6 and 7 are training classes
  FakeHost refused;
  std::string error;
  EXPECT_EQ(run(refused, "train", config, dir.str() + "/refused", false, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("2 of the 4 test classes are training classes ('blob6', 'blob7')"), std::string::npos) << error;
  EXPECT_NE(error.find("data.train_classes"), std::string::npos) << error;
  EXPECT_NE(error.find("data.allow_class_overlap=true"), std::string::npos) << error;
  EXPECT_EQ(refused.progress, 0) << "nothing trained";
  EXPECT_FALSE(fs::exists(dir.str() + "/refused/checkpoints")) << "nothing written";

  // Validation classes are checked too.
  json val = small_config();
  val["data"]["val_classes"] = {0, 8};
  FakeHost val_refused;
  EXPECT_EQ(run(val_refused, "train", val, dir.str() + "/val", false, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("1 of the 2 validation classes are training classes ('blob0')"), std::string::npos) << error;
  // Allowed, the log does not call them separate classes.
  val["data"]["allow_class_overlap"] = true;
  val["epochs"] = 1;
  FakeHost val_allowed;
  ASSERT_EQ(run(val_allowed, "train", val, dir.str() + "/val-allowed", false, &error), MLH_OK) << error;
  std::string val_line;
  for (const auto& l : val_allowed.logs)
    if (l.find("validation set: ") != std::string::npos) val_line = l;
  EXPECT_NE(val_line.find("(its own classes, 1 of them training classes too: data.allow_class_overlap)"),
            std::string::npos)
      << val_line;

  config["data"]["allow_class_overlap"] = true;
  config["epochs"] = 1;
  FakeHost allowed;
  ASSERT_EQ(run(allowed, "train", config, dir.str() + "/allowed", false, &error), MLH_OK) << error;
  bool warned = false;
  for (const auto& l : allowed.logs) warned = warned || l.find("allowed by data.allow_class_overlap") != std::string::npos;
  EXPECT_TRUE(warned);

  // A run trained on disjoint classes, then evaluated on some of its training classes.
  json disjoint = small_config();
  disjoint["epochs"] = 1;
  FakeHost trained;
  ASSERT_EQ(run(trained, "train", disjoint, dir.str() + "/disjoint", false, &error), MLH_OK) << error;
  disjoint["data"]["test_classes"] = {0, 9};
  FakeHost eval_refused;
  EXPECT_EQ(run(eval_refused, "eval", disjoint, dir.str() + "/disjoint", false, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("1 of the 2 test classes are training classes ('blob0')"), std::string::npos) << error;
}

// Test data that is there but lacks a class the config names fails training before anything
// trains, as eval would fail after it; test data that is not there yet is only a warning (it
// may come before eval).
TEST(ProtonetTraining, BrokenTestDataFailsTrainingAndAbsentTestDataIsAWarning) {
  TempDir dir;
  const fs::path test_root = dir.path() / "test-data", not_yet = dir.path() / "not-yet";
  fs::create_directories(test_root);
  // Training decodes the test set whole: the loader is what finds it wrong.
  const protonet::DatasetLoader load = [&](const protonet::DatasetSpec& spec) {
    if (spec.root == test_root.string()) throw protonet::DataError("test-data: class folder 'blob42' not found");
    if (spec.root == not_yet.string()) throw protonet::DataError("folder '" + spec.root + "' not found");
    return fake_load(spec);
  };
  auto run_listing = [&](FakeHost& host, const json& config, const std::string& run_dir, std::string* error) {
    return run_in_process(
        host, [&](mlh::RunContext& ctx) { protonet::run_command(ctx, load, nullptr); },
        {"train", config.dump(), run_dir, kPlan, "{}", false}, error);
  };
  json config = small_config();
  config["epochs"] = 1;
  config["data"]["test_root"] = test_root.string();
  FakeHost broken;
  std::string error;
  EXPECT_EQ(run_listing(broken, config, dir.str() + "/broken", &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("class folder 'blob42' not found"), std::string::npos) << error;
  EXPECT_EQ(broken.progress, 0) << "nothing trained";

  config["data"]["test_root"] = not_yet.string();
  FakeHost absent;
  ASSERT_EQ(run_listing(absent, config, dir.str() + "/absent", &error), MLH_OK) << error;
  bool warned = false;
  for (const auto& l : absent.logs) warned = warned || l.find("cannot list the test classes") != std::string::npos;
  EXPECT_TRUE(warned);
}

// data.trainval (the reference's retraining for its test figures): the validation classes
// join the training ones, every epoch runs without validation or early stopping, the last
// epoch's weights are the result, and eval takes them.
TEST(ProtonetTraining, TrainvalTrainsOnTrainAndValClassesWithoutValidation) {
  TempDir dir;
  json config = small_config();
  config["data"]["train_classes"] = {0, 1, 2, 3, 4, 5};
  config["data"]["val_classes"] = {6, 7};
  config["data"]["trainval"] = true;
  config["patience"] = 1;  // would stop a validated run early; trainval runs every epoch
  FakeHost host;
  std::string error;
  ASSERT_EQ(run(host, "train", config, dir.path(), false, &error), MLH_OK) << error;
  const json summary = json::parse(host.summary);
  EXPECT_EQ(summary["trainval"], true);
  EXPECT_EQ(summary["epochs"], 3);
  EXPECT_EQ(summary["best_epoch"], 3) << "the last epoch is the result";
  EXPECT_EQ(summary["stopped_early"], false);
  EXPECT_EQ(host.metrics.count("val/loss"), 0u) << "no validation";
  EXPECT_EQ(host.metrics["train/loss"].size(), 3u);
  bool eight_classes = false;
  for (const auto& l : host.logs) eight_classes = eight_classes || l.find("images of 8 classes") != std::string::npos;
  EXPECT_TRUE(eight_classes) << "training on train + val classes";
  EXPECT_TRUE(fs::exists(dir.str() + "/model.safetensors"));

  FakeHost eval_host;
  ASSERT_EQ(run(eval_host, "eval", config, dir.path(), false, &error), MLH_OK) << error;
  EXPECT_GT(json::parse(eval_host.summary)["accuracy"].get<double>(), 0.5) << eval_host.summary;
}

// With split lists the protocol is the user's: a split with fewer classes than the episodes'
// way is an error naming it, not a quietly smaller episode.
TEST(ProtonetTraining, ASplitWithFewerClassesThanTheWayIsAnError) {
  TempDir dir;
  json config = small_config();
  config["data"]["format"] = "omniglot";
  config["data"]["splits"] = "lists";
  config["data"]["allow_class_overlap"] = true;  // the fake loader gives validation the training classes
  config["train_way"] = 10;                      // the training set has 8 classes
  FakeHost host;
  std::string error;
  EXPECT_EQ(run(host, "train", config, dir.path(), false, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("split 'train' of data.splits 'lists' has 8 classes"), std::string::npos) << error;
  EXPECT_NE(error.find("10-way"), std::string::npos) << error;

  json idx = small_config();
  idx["data"]["splits"] = "vinyals";
  FakeHost bad;
  EXPECT_EQ(run(bad, "train", idx, dir.path(), false, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("'data.splits'"), std::string::npos) << error;
}

TEST(ProtonetTraining, StopSavesAndResumeEndsWhereAnUninterruptedRunDoes) {
  json config = small_config();
  config["epochs"] = 2;
  config["episodes_per_epoch"] = 5;
  config["val_episodes"] = 4;
  TempDir whole, stopped;
  WholeAndResumed runs;
  std::string error;
  train_whole_and_resumed(config, 7, whole.str(), stopped.str(), runs, error);  // stopped in the second epoch
  ASSERT_TRUE(error.empty()) << error;
  FakeHost &a = runs.whole, &c = runs.resumed;
  EXPECT_NE(runs.stop_message.find("stopped at episode 7"), std::string::npos) << runs.stop_message;
  EXPECT_EQ(c.progress, 10);
  EXPECT_EQ(json::parse(c.summary)["episodes"], 10);

  const auto wa = mlh::rt::load_safetensors(whole.str() + "/model.safetensors");
  const auto wb = mlh::rt::load_safetensors(stopped.str() + "/model.safetensors");
  ASSERT_EQ(wa.size(), wb.size());
  for (const auto& [name, t] : wa) EXPECT_TRUE(at::equal(t, wb.at(name))) << name;
  EXPECT_EQ(json::parse(a.summary)["best_val_loss"].get<double>(), json::parse(c.summary)["best_val_loss"].get<double>());
  // The stopped epoch's training means cover all of it, the episodes before the stop too.
  ASSERT_EQ(a.metrics["train/loss"].size(), 2u);
  ASSERT_EQ(c.metrics["train/loss"].size(), 1u);
  EXPECT_DOUBLE_EQ(c.metrics["train/loss"][0], a.metrics["train/loss"][1]);
  EXPECT_DOUBLE_EQ(c.metrics["train/acc"][0], a.metrics["train/acc"][1]);

  // Every summary field is the uninterrupted run's; the two that name files (the best
  // checkpoint, the weights) name the same file in each run's own folder.
  json sa = json::parse(a.summary), sc = json::parse(c.summary);
  for (const char* file : {"checkpoint", "weights"}) {
    const std::string in_whole = sa[file], in_stopped = sc[file];
    ASSERT_EQ(in_whole.rfind(whole.str(), 0), 0u) << file << ": " << in_whole;
    ASSERT_EQ(in_stopped.rfind(stopped.str(), 0), 0u) << file << ": " << in_stopped;
    sa[file] = in_whole.substr(whole.str().size());
    sc[file] = in_stopped.substr(stopped.str().size());
  }
  EXPECT_EQ(sc, sa) << "uninterrupted: " << sa.dump(2) << "\nresumed: " << sc.dump(2);
}

TEST(ProtonetTraining, GradientCheckpointingAndDataWorkersTrainTheSameModel) {
  json config = small_config();
  config["epochs"] = 1;
  config["episodes_per_epoch"] = 4;
  config["val_episodes"] = 2;
  TempDir plain, checkpointed;
  FakeHost a, b;
  std::string error;
  ASSERT_EQ(run(a, "train", config, plain.path(), false, &error), MLH_OK) << error;
  ASSERT_EQ(run(b, "train", config, checkpointed.path(), false, &error,
                R"({"torch_device": "cpu", "precision": "fp32", "gradient_checkpointing": true, "dataloader_workers": 2, "prefetch_factor": 2})"),
            MLH_OK)
      << error;
  const auto wa = mlh::rt::load_safetensors(plain.str() + "/model.safetensors");
  const auto wb = mlh::rt::load_safetensors(checkpointed.str() + "/model.safetensors");
  for (const auto& [name, t] : wa) EXPECT_TRUE(at::allclose(t, wb.at(name), 1e-4, 1e-5)) << name;
  bool logged = false;
  for (const auto& l : b.logs) logged = logged || l.find("gradient checkpointing") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(ProtonetTraining, EvalWithoutACheckpointIsRefusedAsInput) {
  TempDir dir;
  FakeHost host;
  std::string error;
  EXPECT_EQ(run(host, "eval", small_config(), dir.path(), false, &error), MLH_ERR_INVALID_ARGUMENT);  // exit 2: fixed on the command line
  EXPECT_NE(error.find("no trained model"), std::string::npos) << error;
}

TEST(ProtonetBenchmark, ReportsEpisodeAndEmbeddingThroughput) {
  TempDir dir;
  FakeHost host;
  json config = small_config();
  config["width"] = 8;
  std::string error;
  ASSERT_EQ(run(host, "benchmark", config, dir.path(), false, &error), MLH_OK) << error;
  const json summary = json::parse(host.summary);
  ASSERT_EQ(summary["benchmarks"].size(), 4u);
  EXPECT_EQ(summary["benchmarks"][0]["name"], "matmul_1024x1024_fp32");
  EXPECT_EQ(summary["benchmarks"][0]["unit"], "GFLOP");
  EXPECT_EQ(summary["benchmarks"][1]["name"], "train_episode_5way_5shot_15query_28x28");
  EXPECT_EQ(summary["benchmarks"][2]["name"], "train_episode_60way_5shot_5query_28x28");
  EXPECT_EQ(summary["benchmarks"][3]["unit"], "images");
  for (const auto& b : summary["benchmarks"]) EXPECT_GT(b["throughput"].get<double>(), 0);
  // Each training shape as convolution GFLOP/s against the matmul measured in the same run.
  ASSERT_EQ(summary["notes"].size(), 6u) << summary.dump(2);
  for (int i = 0; i < 2; ++i)
    EXPECT_NE(summary["notes"][i].get<std::string>().find("% of the 1024x1024 fp32 matmul's"), std::string::npos)
        << summary["notes"][i];
  // The convolution paths tried against the same matmul: the plan's, the other layout,
  // oneDNN switched off, and the blocks' batch norm, ReLU and pooling unfused.
  const json& variants = summary["convolution_variants"];
  ASSERT_EQ(variants.size(), 4u) << variants.dump();
  EXPECT_TRUE(variants.contains("channels-last")) << variants.dump();
  EXPECT_TRUE(variants.contains("oneDNN off (ATen im2col + GEMM)")) << variants.dump();
  EXPECT_TRUE(variants.contains("batch norm, ReLU and pooling unfused (ATen's ops)")) << variants.dump();
  for (const auto& [name, v] : variants.items()) {
    EXPECT_GT(v["episodes_per_s"].get<double>(), 0) << name;
    EXPECT_GT(v["gemm_share"].get<double>(), 0) << name;
  }
}

TEST(ProtonetCalibrate, TimesATrainingEpisodeOfTheConfigsShape) {
  TempDir dir;
  FakeHost host;
  json config = small_config();
  config["width"] = 8;
  config["train_way"] = 7;
  const json plan = {{"torch_device", "cpu"}, {"precision", "fp32"},
                     {"calibration", {{"seconds", 0.2}, {"check_precision", "bf16"}}}};
  std::string error;
  ASSERT_EQ(run(host, "calibrate", config, dir.path(), false, &error, plan.dump()), MLH_OK) << error;
  const json summary = json::parse(host.summary);
  EXPECT_EQ(summary["calibration"]["unit"], "episodes");
  EXPECT_EQ(summary["calibration"]["benchmark"].get<std::string>().rfind("train_episode_7way_", 0), 0u) << summary;
  EXPECT_GT(summary["calibration"]["throughput"].get<double>(), 0);
  EXPECT_GE(summary["calibration"]["iterations"].get<int>(), 3);
  // The bf16 quality check ran on the run's data (the easy blob set): both precisions learn
  // it, and the held-out figures it decided by are in the reply.
  const json& check = summary.at("precision_check");
  EXPECT_EQ(check["precision"], "bf16");
  EXPECT_TRUE(check["passed"].get<bool>()) << check.dump();
  EXPECT_GT(check["fp32_accuracy"].get<double>(), 0.5) << check.dump();
  EXPECT_GE(check["held_out"].get<int>(), 30) << check.dump();
  EXPECT_GE(check["steps"].get<int>(), 20) << check.dump();
  ASSERT_TRUE(check["interval"].is_array()) << check.dump();
  EXPECT_GE(check["interval"][1].get<double>(), 0) << check.dump();
  EXPECT_NEAR(check["difference"].get<double>(),
              check["reduced_accuracy"].get<double>() - check["fp32_accuracy"].get<double>(), 1e-9);
  // Judged on classes the check did not train on, as a few-shot run is: the data has no
  // validation classes, so 4 of its 8 training classes (the test way) are held out, and the
  // check trains 4-way on the other four.
  EXPECT_NE(check["on"].get<std::string>().find("4-way 2-shot 3-query"), std::string::npos) << check.dump();
  EXPECT_NE(check["on"].get<std::string>().find("4 of the 8 training classes, held out"), std::string::npos)
      << check.dump();
  EXPECT_EQ(host.metrics.count("val/loss"), 0u) << "the check writes no metrics";

  // A way beyond the training classes is timed as training runs it: capped, saying so.
  config["train_way"] = 500;
  FakeHost capped;
  const json timing_only = {{"torch_device", "cpu"}, {"precision", "fp32"}, {"calibration", {{"seconds", 0.1}}}};
  ASSERT_EQ(run(capped, "calibrate", config, dir.path(), false, &error, timing_only.dump()), MLH_OK) << error;
  const json timed = json::parse(capped.summary)["calibration"];
  EXPECT_EQ(timed["benchmark"].get<std::string>().find("500way"), std::string::npos) << timed;
  EXPECT_NE(timed.value("note", "").find("500-way asked"), std::string::npos) << timed;
}

// A --init-from file that does not fit the config's encoder is refused before any image is
// loaded (a folder of images can take minutes to decode), with the tensor named.
TEST(ProtonetTraining, AnInitFromFileThatDoesNotFitIsRefusedBeforeTheDataLoads) {
  TempDir dir;
  const std::string wrong = dir.str() + "/wrong.safetensors";
  mlh::rt::save_safetensors({{"block0_conv.weight", at::zeros({8, 3, 3, 3})}}, wrong);
  const json plan = {{"torch_device", "cpu"}, {"precision", "fp32"},
                     {"init_from", {{"path", wrong}, {"freeze", json::array()}}}};
  int loads = 0;
  FakeHost host;
  std::string error;
  const mlh_status status = run_in_process(
      host,
      [&loads](mlh::RunContext& ctx) {
        protonet::run_command(ctx, [&loads](const protonet::DatasetSpec& spec) {
          ++loads;
          return fake_load(spec);
        });
      },
      {"train", small_config().dump(), dir.str() + "/run", plan.dump(), "{}", false}, &error);
  EXPECT_EQ(status, MLH_ERR_INVALID_ARGUMENT) << error;
  EXPECT_NE(error.find("block0_conv.weight"), std::string::npos) << error;
  EXPECT_EQ(loads, 0) << "the data was loaded before the file was checked";
}

// The check cannot run without the run's data: it fails, saying why, so the host keeps fp32.
TEST(ProtonetCalibrate, ThePrecisionCheckFailsWhenTheDataCannotBeLoaded) {
  TempDir dir;
  FakeHost host;
  json config = small_config();
  config["width"] = 8;
  const json plan = {{"torch_device", "cpu"}, {"precision", "fp32"},
                     {"calibration", {{"seconds", 0.1}, {"check_precision", "bf16"}}}};
  std::string error;
  ASSERT_EQ(run_in_process(host,
                           [](mlh::RunContext& ctx) {
                             protonet::run_command(ctx, [](const protonet::DatasetSpec& spec) -> ImageSet {
                               throw protonet::DataError("cannot open '" + spec.root + "'");
                             });
                           },
                           {"calibrate", config.dump(), dir.path(), plan.dump(), "{}", false}, &error),
            MLH_OK)
      << error;
  const json check = json::parse(host.summary).at("precision_check");
  EXPECT_FALSE(check["passed"].get<bool>());
  EXPECT_NE(check["reason"].get<std::string>().find("cannot open 'train'"), std::string::npos) << check.dump();
}

}  // namespace
