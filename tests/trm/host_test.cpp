// The plugin through the real host: describe; build-data, then a short train on that folder,
// eval and solve from the run folder; and a bad setting refused before anything runs.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "algorithm_host_test.hpp"
#include "arc_fixture.hpp"
#include "run_snapshot.hpp"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;


using trm_test::host;
using trm_test::build_and_train_arc;

class TrmHost : public HostTempDirTest {
 protected:
  TrmHost() : HostTempDirTest("trm-host-") {}
};

TEST_F(TrmHost, Describe) {
  const HostResult r = host("--describe trm --json");
  ASSERT_EQ(r.rc, 0) << r.output;
  const json d = json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(d["commands"], json({"train", "build-data", "eval", "solve", "generate", "forward", "export", "benchmark", "calibrate"}));
  EXPECT_EQ(d["config_defaults"]["model"]["hidden"], 512);
  EXPECT_TRUE(d["presets"].contains("sudoku-easy"));
  EXPECT_TRUE(d["presets"].contains("text"));
  // The reference's ARC recipe: its optimizer, global batch and puzzle embedding length.
  for (const char* arc : {"arc1", "arc2"}) {
    const json& p = d["presets"][arc];
    EXPECT_EQ(p["optimizer"], "adam_atan2") << arc;
    EXPECT_EQ(p["global_batch_size"], 768) << arc;
    EXPECT_EQ(p["model"]["puzzle_emb_len"], 16) << arc;
    EXPECT_EQ(p["model"]["l_cycles"], 4) << arc;
    EXPECT_EQ(p["build"]["kind"], "arc") << arc;
  }
  EXPECT_EQ(d["presets"]["arc2"]["build"]["test_set"], "evaluation2");
  EXPECT_EQ(d["presets"]["arc-cpu"]["build"]["max_tasks"], 8);
}

TEST_F(TrmHost, BuildDataTrainEvalSolve) {
  const std::string data = dir_ + "/sudoku";
  const std::string run = dir_ + "/run";
  const HostResult b = host("--algorithm trm --command build-data --device cpu --run-dir " + dir_ + "/build" +
                            " --set build.train=60 --set build.test=10 --set data.dir=" + data);
  ASSERT_EQ(b.rc, 0) << b.output;
  EXPECT_TRUE(fs::exists(data + "/train/all__inputs.npy"));

  const std::string common = " --device cpu --run-dir " + run;
  const HostResult t = host("--algorithm trm" + common + " --set preset=sudoku-easy --set data.dir=" + data +
                            " --max-steps 6 --set batch_size=8 --set eval_every=3 --set model.hidden=32");
  ASSERT_EQ(t.rc, 0) << t.output;
  EXPECT_NE(t.output.find("cpu:0"), std::string::npos) << t.output;
  const json s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["status"], "completed") << s.dump();
  EXPECT_EQ(s["result"]["steps"], 6) << "--max-steps ends the preset's run: " << s.dump();
  EXPECT_EQ(s["result"]["max_steps"], 6);
  EXPECT_TRUE(s["last_metrics"].contains("train/loss"));
  EXPECT_TRUE(s["last_metrics"].contains("eval/exact_accuracy"));
  EXPECT_TRUE(fs::exists(run + "/model.safetensors"));
  EXPECT_FALSE(fs::is_empty(run + "/checkpoints"));

  // eval and solve write into folders of their own; the training run's files stay as they were.
  const auto trained = training_files(run);
  const HostResult e = host("--algorithm trm --command eval --resume" + common);
  ASSERT_EQ(e.rc, 0) << e.output;
  EXPECT_EQ(read_json_file(run + "/commands/eval-1/summary.json")["result"]["examples"], 10);
  EXPECT_NE(e.output.find("eval: results in " + run + "/commands/eval-1"), std::string::npos) << e.output;
  const HostResult so = host("--algorithm trm --command solve --resume" + common + " --set solve.index=3");
  ASSERT_EQ(so.rc, 0) << so.output;
  EXPECT_NE(so.output.find("model's answer"), std::string::npos) << so.output;
  EXPECT_TRUE(fs::exists(run + "/commands/solve-1/summary.json"));
  EXPECT_EQ(changed_files(trained, training_files(run)), "");
  EXPECT_EQ(read_json_file(run + "/summary.json")["command"], "train");
}

TEST_F(TrmHost, BadSettingIsRefused) {
  const HostResult r = host("--algorithm trm --device cpu --run-dir " + dir_ + "/run --set model.loss=hinge");
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("model.loss"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ + "/run/model.json"));
}

// ---- plan fields, checked from inside the worker (docs/plan.md, "What each field does") ----

class TrmPlanEffects : public TrmHost {
 protected:
  // A tiny Sudoku set and a run of the small task preset on it.
  void SetUp() override {
    TrmHost::SetUp();
    data_ = dir_ + "/sudoku";
    const HostResult b = host("--algorithm trm --command build-data --device cpu --run-dir " + dir_ + "/build" +
                              " --set build.train=60 --set build.test=10 --set data.dir=" + data_);
    ASSERT_EQ(b.rc, 0) << b.output;
  }
  HostResult train(const std::string& run, int steps, const std::string& extra = "") {
    return host("--algorithm trm --device cpu --run-dir " + dir_ + "/" + run + " --set preset=sudoku-easy --set data.dir=" +
                data_ + " --set train_steps=" + std::to_string(steps) +
                " --set batch_size=8 --set model.hidden=32 --set checkpoint_every=3 " + extra);
  }
  std::string settings(const std::string& name, const std::string& text) {
    write_text_file(dir_ + "/" + name, text);
    return "--hardware-config " + dir_ + "/" + name;
  }
  std::string data_;
};

// Data workers draw the same batches as the training thread would, in the same order, and a
// checkpoint records the sampler where the training stood, however far the workers ran ahead:
// with and without workers the runs end with the same loss, resumed or not.
TEST_F(TrmPlanEffects, DataWorkersPrefetchTheSameBatches) {
  const std::string workers = settings("workers.ini", "dataloader_workers = 2\nprefetch_factor = 3\n");
  HostResult r = train("plain", 6, "--no-hardware-config");
  ASSERT_EQ(r.rc, 0) << r.output;
  r = train("workers", 6, workers);
  ASSERT_EQ(r.rc, 0) << r.output;
  const json plain = read_json_file(dir_ + "/plain/summary.json"), with = read_json_file(dir_ + "/workers/summary.json");
  EXPECT_EQ(plain["result"]["final_train_loss"], with["result"]["final_train_loss"]) << "the same batches in the same order";

  const json applied = with["result"]["plan_applied"];
  EXPECT_EQ(applied["dataloader_workers"]["threads"], 2) << applied.dump(2);
  EXPECT_GE(applied["dataloader_workers"]["batches_by_workers"].get<int64_t>(), 6) << applied.dump(2);
  EXPECT_EQ(applied["prefetch_factor"]["batches_ahead"], 6) << applied.dump(2);
  EXPECT_EQ(plan_applied(dir_ + "/plain")["dataloader_workers"]["threads"], 0);
  EXPECT_FALSE(plan_applied(dir_ + "/plain")["dataloader_workers"].contains("batches_by_workers"));
  // Without workers the plan says the prefetch factor does nothing; with them it applies.
  EXPECT_TRUE(read_json_file(dir_ + "/plain/plan.json")["no_effect"].contains("prefetch_factor"));
  EXPECT_FALSE(read_json_file(dir_ + "/workers/plan.json")["no_effect"].contains("prefetch_factor"));

  // Stopped after 3 steps (a checkpoint) and resumed to 6: with workers as without.
  for (const std::string& name : {std::string("resumed_plain"), std::string("resumed_workers")}) {
    const std::string how = name == "resumed_plain" ? "--no-hardware-config" : workers;
    ASSERT_EQ(train(name, 3, how).rc, 0);
    r = host("--algorithm trm --device cpu --resume --run-dir " + dir_ + "/" + name + " --set train_steps=6 " + how);
    ASSERT_EQ(r.rc, 0) << r.output;
  }
  EXPECT_EQ(read_json_file(dir_ + "/resumed_plain/summary.json")["result"]["final_train_loss"],
            read_json_file(dir_ + "/resumed_workers/summary.json")["result"]["final_train_loss"])
      << "the checkpoint's sampler state is the one after the last batch trained on";
}

TEST_F(TrmPlanEffects, CheckpointingAndBf16RunInTheWorker) {
  const bool bf16 = cpu_has_bf16(host("--probe --json"));
  const HostResult r = train("run", 3, settings("hw.ini", "gradient_checkpointing = true\n") +
                                           (bf16 ? " --precision bf16" : ""));
  ASSERT_EQ(r.rc, 0) << r.output;
  const json applied = plan_applied(dir_ + "/run");
  EXPECT_GT(applied["gradient_checkpointing"]["checkpointed_calls"].get<int64_t>(), 0) << applied.dump(2);
  if (bf16) {
    EXPECT_GT(applied["precision"]["bf16_autocast_regions"].get<int64_t>(), 0) << applied.dump(2);
  }
  // Without the setting nothing is recomputed and fp32 enters no autocast region.
  ASSERT_EQ(train("plain", 3, "--no-hardware-config --precision fp32").rc, 0);
  const json plain = plan_applied(dir_ + "/plain");
  EXPECT_FALSE(plain.contains("gradient_checkpointing")) << plain.dump(2);
  EXPECT_FALSE(plain.contains("precision")) << plain.dump(2);
  if (!bf16) GTEST_SKIP() << "this CPU runs no bf16: checkpointing checked, bf16 not";
}

// The plan shows the model the config and preset give, with the parameter count the worker
// then trains; full and reduced size the model.
TEST_F(TrmPlanEffects, ThePlanShowsTheModelItTrains) {
  const HostResult r = train("run", 2, "--no-hardware-config");
  ASSERT_EQ(r.rc, 0) << r.output;
  const json plan = read_json_file(dir_ + "/run/plan.json");
  EXPECT_EQ(plan["model"]["parameters"], read_json_file(dir_ + "/run/summary.json")["result"]["parameters"]);
  EXPECT_NE(plan["model"]["shape"].get<std::string>().find("hidden 32"), std::string::npos) << plan["model"].dump();

  auto parameters = [&](const std::string& preset) {
    const HostResult p = host("--print-plan --algorithm trm --device cpu --set preset=" + preset + " --set data.dir=" + data_);
    EXPECT_EQ(p.rc, 0) << p.output;
    const auto line = p.output.find("  model   ");
    EXPECT_NE(line, std::string::npos) << p.output;
    const std::string text = p.output.substr(line, p.output.find('\n', line) - line);
    std::string digits;
    for (char c : text.substr(text.rfind(", ") + 2)) if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
    return std::stoll(digits);
  };
  EXPECT_GT(parameters("full"), 10 * parameters("reduced"));
  // The batch size is trm's: the command line sets it.
  const HostResult b = host("--print-plan --algorithm trm --device cpu --batch-size 16 --set data.dir=" + data_);
  ASSERT_EQ(b.rc, 0) << b.output;
  EXPECT_NE(b.output.find("\"batch_size\": 16"), std::string::npos) << b.output;
  EXPECT_EQ(b.output.find("batch size               16 (no effect"), std::string::npos) << b.output;
}

// Two CPU ranks (Gloo) on a Sudoku set with puzzle-identifier embeddings: each rank trains
// on its half of every global batch, the sign-SGD rows are gathered from both, and the
// models stay identical; a stopped run resumes on both ranks.
// ARC, end to end: hand-made tasks in Kaggle's layout through build-data (kind=arc), a short
// training run that evaluates with the ARC scorer, eval (pass@K and submission.json) and solve
// on a challenges file; a malformed task file is refused naming the file, task and field, and
// nothing is written.
TEST_F(TrmHost, ArcBuildTrainEvalSolve) {
  const std::string prefix = dir_ + "/fx", data = dir_ + "/arc", run = dir_ + "/run";
  build_and_train_arc(dir_, data, run);
  if (HasFatalFailure()) return;
  const std::string common = " --device cpu --no-calibrate --run-dir " + run;
  const json s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["status"], "completed") << s.dump();
  EXPECT_TRUE(s["result"]["eval"].contains("pass@1")) << s.dump();
  EXPECT_TRUE(s["result"]["eval"].contains("pass@2")) << s.dump();
  EXPECT_TRUE(s["last_metrics"].contains("eval/pass@2")) << s.dump();

  const HostResult e = host("--algorithm trm --command eval --resume" + common);
  ASSERT_EQ(e.rc, 0) << e.output;
  const json es = read_json_file(run + "/commands/eval-1/summary.json")["result"];
  for (const char* k : {"pass@1", "pass@2", "pass@5", "pass@10", "pass@100", "pass@1000"}) {
    ASSERT_TRUE(es.contains(k)) << k << " " << es.dump();
    EXPECT_GE(es[k].get<double>(), 0.0);
    EXPECT_LE(es[k].get<double>(), 1.0);
  }
  EXPECT_LE(es["pass@1"].get<double>(), es["pass@2"].get<double>());
  const json submission = read_json_file(run + "/commands/eval-1/submission.json");
  ASSERT_EQ(submission.size(), 3u) << submission.dump();
  for (const auto& [task, entries] : submission.items()) {
    ASSERT_EQ(entries.size(), 1u) << task;
    EXPECT_TRUE(entries[0].contains("attempt_1") && entries[0].contains("attempt_2")) << entries.dump();
  }

  // solve on the challenges alone (no solutions), plus a task the model never saw.
  json challenges = read_json_file(prefix + "_evaluation_challenges.json");
  challenges["ffffffff"] = {{"train", {{{"input", {{3}}}, {"output", {{4}}}}}}, {"test", {{{"input", {{3, 3}}}}}}};
  std::ofstream(dir_ + "/challenges.json") << challenges.dump();
  const HostResult so = host("--algorithm trm --command solve --resume" + common +
                             " --set solve.arc_challenges=" + dir_ + "/challenges.json");
  ASSERT_EQ(so.rc, 0) << so.output;
  EXPECT_NE(so.output.find("1 of 4 tasks are not in the training data"), std::string::npos) << so.output;
  const json solved = read_json_file(run + "/commands/solve-1/submission.json");
  EXPECT_EQ(solved.size(), 4u) << solved.dump();
  EXPECT_EQ(read_json_file(run + "/commands/solve-1/summary.json")["result"]["unknown_tasks"], 1);
  // A malformed challenges file is refused as build-data refuses one, naming file, task and field.
  challenges["ffffffff"]["test"][0]["input"] = {{3, 12}};
  std::ofstream(dir_ + "/bad_challenges.json") << challenges.dump();
  const HostResult sb = host("--algorithm trm --command solve --resume" + common +
                             " --set solve.arc_challenges=" + dir_ + "/bad_challenges.json");
  EXPECT_EQ(sb.rc, 2) << sb.output;  // a bad data file: exit 2, and no command folder left
  EXPECT_NE(sb.output.find("bad_challenges.json: task ffffffff: test[0].input"), std::string::npos) << sb.output;
  EXPECT_FALSE(fs::exists(run + "/commands/solve-2")) << sb.output;

  // A ragged grid: refused, naming the file, the task and the field; no dataset written.
  json bad = read_json_file(prefix + "_training_challenges.json");
  bad["t0abcdef0"]["train"][1]["input"] = {{1, 2}, {3}};
  std::ofstream(dir_ + "/bad_training_challenges.json") << bad.dump();
  for (const char* f : {"_training_solutions.json", "_evaluation_challenges.json", "_evaluation_solutions.json"})
    fs::copy_file(prefix + f, dir_ + "/bad" + f);
  const HostResult r = host("--algorithm trm --command build-data --device cpu --run-dir " + dir_ + "/build2" +
                            " --set build.kind=arc --set build.arc_prefix=" + dir_ + "/bad --set data.dir=" + dir_ + "/arc2");
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("bad_training_challenges.json"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ + "/build2")) << r.output;
  EXPECT_NE(r.output.find("t0abcdef0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("train[1].input"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ + "/arc2/train")) << "nothing written";
}

TEST_F(TrmHost, TwoRanksTrainInLockstepWithPuzzleEmbeddings) {
  const std::string data = dir_ + "/sudoku";
  const HostResult b = host("--algorithm trm --command build-data --device cpu --run-dir " + dir_ + "/build" +
                            " --set build.train=60 --set build.test=10 --set data.dir=" + data);
  ASSERT_EQ(b.rc, 0) << b.output;
  const std::string run = dir_ + "/run2";
  const std::string args = "--algorithm trm --device cpu --nproc-per-node 2 --batch-size 4 --run-dir " + run +
                           " --set preset=sudoku-easy --set data.dir=" + data +
                           " --set train_steps=6 --set eval_every=3 --set model.hidden=32 --set model.puzzle_emb_ndim=32";
  const HostResult t = host(args);
  ASSERT_EQ(t.rc, 0) << t.output;
  const json s = read_json_file(run + "/summary.json"), s1 = read_json_file(run + "/ranks/1/summary.json");
  EXPECT_EQ(s["status"], "completed") << s.dump();
  EXPECT_EQ(s["result"]["global_batch_size"], 8) << s.dump();
  EXPECT_EQ(s["result"]["ranks_agree"], true) << s.dump();
  EXPECT_EQ(s1["result"]["ranks_agree"], true) << s1.dump();
  EXPECT_EQ(read_json_file(run + "/plan.json")["distributed"]["global_batch_size"], 8);
  // Resumed with more steps, both ranks continue from rank 0's checkpoint.
  const HostResult r = host("--algorithm trm --device cpu --nproc-per-node 2 --batch-size 4 --resume --run-dir " + run +
                            " --set train_steps=9");
  ASSERT_EQ(r.rc, 0) << r.output;
  const json rs = read_json_file(run + "/summary.json");
  EXPECT_EQ(rs["result"]["steps"], 9) << rs.dump();
  EXPECT_EQ(rs["result"]["ranks_agree"], true) << rs.dump();
  std::ifstream log1(run + "/ranks/1/log.txt");
  const std::string text((std::istreambuf_iterator<char>(log1)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("resumed at step 6"), std::string::npos) << text;
}

}  // namespace
