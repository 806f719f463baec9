// Warm starts from the TRM reference: its model (models/ of the unmodified reference, read from
// $MLH_REFERENCE_DIR/trm, default ../shared/reference beside the checkout) is built
// and saved by PyTorch 2.x in the repo's .venv/ exactly as its pretrain.py saves checkpoints
// (torch.save of the compiled loss head's state_dict: names under "_orig_mod.model.", a file
// named step_<N>); our Trm loads that file through --init-from's reader and must give the
// reference's logits and halting logits on the same batch, for the attention and the MLP variant.
// Skips, saying why, without the reference (python/reference_trm.py exits 77 naming the folder
// it looked at), without .venv/ or without torch, pydantic and einops in it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <mlh/runtime/warm_start.hpp>
#include <nlohmann/json.hpp>

#include "model/model_config.hpp"
#include "model/trm.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

namespace fs = std::filesystem;

struct ScratchDir {
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "trm-reference-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

TEST(TrmReference, StateDictFromTheReferenceGivesItsLogits) {
  const fs::path python = MLH_TRM_VENV_PYTHON;
  if (!fs::exists(python)) GTEST_SKIP() << "no Python at " << python << " (bash scripts/torch-venv.sh --peers makes .venv/)";
  ScratchDir dir;
  const std::string command = python.string() + " " + std::string(MLH_TRM_PYTHON_DIR) + "/reference_trm.py " +
                              dir.path.string() + " > " + (dir.path / "log.txt").string() + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream log_file(dir.path / "log.txt");
  const std::string log((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) GTEST_SKIP() << log;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command << "\n" << log;

  for (const char* variant : {"attention", "mlp_t"}) {
    SCOPED_TRACE(variant);
    const fs::path out = dir.path / variant;
    std::ifstream config_file(out / "config.json");
    const trm::ModelConfig config = trm::model_config_from_json(nlohmann::json::parse(config_file));
    at::manual_seed(1);
    trm::Trm model(config), untouched(config);
    model->eval();
    untouched->eval();

    const mlh::rt::WeightsFile weights = mlh::rt::read_weights_file((out / "step_0").string());
    EXPECT_EQ(weights.format, "torch.save state dict");
    const mlh::rt::WarmStartReport report = mlh::rt::load_weights_into(*model, weights);
    EXPECT_EQ(report.dropped_prefix, "_orig_mod.model.");
    EXPECT_TRUE(report.unused.empty()) << report.describe();
    EXPECT_EQ(report.loaded, weights.tensors.size()) << report.describe();
    // The reference does not save its RoPE tables (persistent=False): ours are kept as built.
    for (const std::string& kept : report.kept_buffers)
      EXPECT_NE(kept.find("rotary_emb"), std::string::npos) << report.describe();

    const auto expected = mlh::rt::read_weights_file((out / "expected.pt").string()).tensors;
    const trm::BatchTensors batch{expected.at("inputs"), expected.at("labels"), expected.at("puzzle_identifiers")};
    torch::NoGradGuard no_grad;
    trm::Carry carry = model->initial_carry(batch);
    const trm::StepOutput step = model->forward(carry, batch);
    ASSERT_EQ(step.logits.sizes(), expected.at("logits").sizes());
    const double logits_diff = max_abs_diff(step.logits.to(at::kFloat), expected.at("logits"));
    const double halt_diff = max_abs_diff(step.q_halt_logits.to(at::kFloat), expected.at("q_halt_logits"));
    EXPECT_LT(logits_diff, 1e-4) << "largest logit " << expected.at("logits").abs().max().item<double>();
    EXPECT_LT(halt_diff, 1e-4);
    // A model that did not load the file disagrees: the comparison can fail.
    trm::Carry other = untouched->initial_carry(batch);
    EXPECT_GT(max_abs_diff(untouched->forward(other, batch).logits.to(at::kFloat), expected.at("logits")), 1e-2);
    std::printf("[ %s ] reference logits reproduced to %.2e (halting %.2e)\n", variant, logits_diff, halt_diff);
  }
}

}  // namespace
