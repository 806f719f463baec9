// The plugin through the real host: describe; build-data, then a short train on that folder,
// eval and solve from the run folder; and a bad setting refused before anything runs.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "algorithm_host_test.hpp"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

HostResult host(const std::string& args) { return run_host(TRM_HOST_BIN, TRM_PLUGIN_DIR, args); }

class TrmHost : public HostTempDirTest {
 protected:
  TrmHost() : HostTempDirTest("trm-host-") {}
};

TEST_F(TrmHost, Describe) {
  const HostResult r = host("--describe trm");
  ASSERT_EQ(r.rc, 0) << r.output;
  const json d = json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(d["commands"], json({"train", "build-data", "eval", "solve", "generate", "benchmark", "calibrate"}));
  EXPECT_EQ(d["config_defaults"]["model"]["hidden"], 512);
  EXPECT_TRUE(d["presets"].contains("sudoku-easy"));
  EXPECT_TRUE(d["presets"].contains("text"));
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
                            " --set train_steps=6 --set batch_size=8 --set eval_every=3 --set model.hidden=32");
  ASSERT_EQ(t.rc, 0) << t.output;
  EXPECT_NE(t.output.find("cpu:0"), std::string::npos) << t.output;
  const json s = read_json_file(run + "/summary.json");
  EXPECT_EQ(s["status"], "completed") << s.dump();
  EXPECT_EQ(s["result"]["steps"], 6);
  EXPECT_TRUE(s["last_metrics"].contains("train/loss"));
  EXPECT_TRUE(s["last_metrics"].contains("eval/exact_accuracy"));
  EXPECT_TRUE(fs::exists(run + "/model.safetensors"));
  EXPECT_FALSE(fs::is_empty(run + "/checkpoints"));

  const HostResult e = host("--algorithm trm --command eval --resume" + common);
  ASSERT_EQ(e.rc, 0) << e.output;
  EXPECT_EQ(read_json_file(run + "/summary.json")["result"]["examples"], 10);
  const HostResult so = host("--algorithm trm --command solve --resume" + common + " --set solve.index=3");
  ASSERT_EQ(so.rc, 0) << so.output;
  EXPECT_NE(so.output.find("model's answer"), std::string::npos) << so.output;
}

TEST_F(TrmHost, BadSettingIsRefused) {
  const HostResult r = host("--algorithm trm --device cpu --run-dir " + dir_ + "/run --set model.loss=hinge");
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("model.loss"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ + "/run/model.json"));
}

// Two CPU ranks (Gloo) on a Sudoku set with puzzle-identifier embeddings: each rank trains
// on its half of every global batch, the sign-SGD rows are gathered from both, and the
// models stay identical; a stopped run resumes on both ranks.
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
