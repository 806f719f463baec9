// The plugin through the real host: describe; build-data, then a short train on that folder,
// eval and solve from the run folder; and a bad setting refused before anything runs.
#include <filesystem>
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
  EXPECT_EQ(d["commands"], json({"train", "build-data", "eval", "solve", "generate", "benchmark"}));
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

}  // namespace
