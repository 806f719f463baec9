// Warm starts (mlh/runtime/warm_start.hpp): weights read from each format a user brings (an
// mlhost run's model.safetensors and checkpoints, torch.save state dicts as the TRM reference
// and Lightning write them, under their prefixes), copied into a freshly built model, and every
// way a file can fail to fit refused by name with the model left as it was. Then through the
// session: the plan's init_from loads and freezes, and a frozen parameter does not train.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/safetensors.hpp>
#include <mlh/runtime/training_session.hpp>
#include <mlh/runtime/warm_start.hpp>

#include "fake_host.hpp"
#include "temp_dir.hpp"

namespace {

using mlh::rt::load_weights_into;
using mlh::rt::read_weights_file;

// Linear(2, 3) -> Tanh -> Linear(3, `out`) -> BatchNorm1d(`out`) (running stats are buffers).
torch::nn::Sequential make_net(uint64_t seed, int64_t hidden = 3) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(2, hidden), torch::nn::Tanh(), torch::nn::Linear(hidden, 1),
                               torch::nn::BatchNorm1d(1));
}

std::map<std::string, at::Tensor> tensors_of(const torch::nn::Module& m) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : m.named_parameters()) out[p.key()] = p.value().detach().clone();
  for (const auto& b : m.named_buffers()) out[b.key()] = b.value().detach().clone();
  return out;
}

bool same(const torch::nn::Module& a, const torch::nn::Module& b) {
  const auto ta = tensors_of(a), tb = tensors_of(b);
  if (ta.size() != tb.size()) return false;
  for (const auto& [name, t] : ta)
    if (!tb.count(name) || !at::equal(t, tb.at(name))) return false;
  return true;
}

// A state dict as torch.save writes it (the zip format, read back by torch.load), each name
// with `prefix` in front; `wrap_key` non-empty nests it as {wrap_key: dict, "epoch": 3}.
void write_torch_state_dict(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                            const std::string& prefix, const std::string& wrap_key = "") {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  for (const auto& [name, t] : tensors) dict.insert(prefix + name, t);
  c10::IValue value(dict);
  if (!wrap_key.empty()) {
    c10::impl::GenericDict outer(c10::StringType::get(), c10::AnyType::get());
    outer.insert(wrap_key, dict);
    outer.insert("epoch", c10::IValue(int64_t{3}));
    value = c10::IValue(outer);
  }
  const std::vector<char> bytes = torch::pickle_save(value);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The mlh::Error thrown by `f`, its message in *message.
mlh_status code_of(const std::function<void()>& f, std::string* message) {
  try {
    f();
  } catch (const mlh::Error& e) {
    *message = e.what();
    return e.code();
  }
  return MLH_OK;
}

TEST(WarmStart, ARunsSafetensorsLoadsEveryTensor) {
  TempDir dir;
  auto source = make_net(1), target = make_net(2);
  ASSERT_FALSE(same(*source, *target));
  const std::string path = dir.str() + "/model.safetensors";
  mlh::rt::export_module_weights(*source, path);
  const auto file = read_weights_file(path);
  EXPECT_EQ(file.format, "safetensors");
  const auto report = load_weights_into(*target, file);
  EXPECT_TRUE(same(*source, *target));
  EXPECT_EQ(report.loaded, tensors_of(*source).size());
  EXPECT_EQ(report.dropped_prefix, "");
  EXPECT_TRUE(report.unused.empty() && report.kept_buffers.empty() && report.frozen.empty());
}

TEST(WarmStart, ACheckpointsModelModuleLoads) {
  TempDir dir;
  auto source = make_net(1), target = make_net(2);
  torch::optim::Adam optimizer(source->parameters(), torch::optim::AdamOptions(0.1));
  mlh::rt::TrainingState state;
  state.add("model", *source).add("optimizer", optimizer);
  mlh::rt::CheckpointManager manager(dir.str());
  const std::string path = manager.save(state, 7);
  const auto file = read_weights_file(path);
  EXPECT_EQ(file.format, "mlhost checkpoint");
  load_weights_into(*target, file);
  EXPECT_TRUE(same(*source, *target));
}

// The TRM reference saves torch.compile(ACTLossHead(model)).state_dict(): every name carries
// "_orig_mod.model."; DDP's carry "module.".
TEST(WarmStart, ReferenceStyleStateDictLoadsUnderItsPrefix) {
  TempDir dir;
  auto source = make_net(1);
  for (const std::string prefix : {"_orig_mod.model.", "module.", ""}) {
    auto target = make_net(2);
    const std::string path = dir.str() + "/step_100";  // the reference's name: no extension
    write_torch_state_dict(path, tensors_of(*source), prefix);
    const auto file = read_weights_file(path);
    EXPECT_EQ(file.format, "torch.save state dict");
    const auto report = load_weights_into(*target, file);
    EXPECT_TRUE(same(*source, *target)) << prefix;
    EXPECT_EQ(report.dropped_prefix, prefix);
    EXPECT_NE(report.describe().find(prefix.empty() ? "tensors" : "'" + prefix + "'"), std::string::npos)
        << report.describe();
  }
}

// Lightning's checkpoints and many scripts' keep the weights under "state_dict" or "model".
TEST(WarmStart, AStateDictInsideATrainingCheckpointLoads) {
  TempDir dir;
  auto source = make_net(1);
  for (const std::string key : {"state_dict", "model"}) {
    auto target = make_net(2);
    const std::string path = dir.str() + "/" + key + ".ckpt";
    write_torch_state_dict(path, tensors_of(*source), "model.", key);
    load_weights_into(*target, read_weights_file(path));
    EXPECT_TRUE(same(*source, *target)) << key;
  }
}

TEST(WarmStart, MissingBuffersAreKeptAndExtraTensorsReported) {
  TempDir dir;
  auto source = make_net(1), target = make_net(2);
  auto tensors = tensors_of(*source);
  tensors.erase("3.running_mean");            // a buffer the file lacks: kept as built
  tensors["head.weight"] = at::ones({4, 4});  // the model has no place for it
  const at::Tensor built_mean = target->ptr(3)->named_buffers()["running_mean"].clone();
  const std::string path = dir.str() + "/weights.pt";
  write_torch_state_dict(path, tensors, "");
  const auto report = load_weights_into(*target, read_weights_file(path));
  EXPECT_EQ(report.kept_buffers, std::vector<std::string>{"3.running_mean"});
  EXPECT_EQ(report.unused, std::vector<std::string>{"head.weight"});
  EXPECT_TRUE(at::equal(target->ptr(3)->named_buffers()["running_mean"], built_mean));
  EXPECT_TRUE(at::equal(target->ptr(0)->named_parameters()["weight"], source->ptr(0)->named_parameters()["weight"]));
  EXPECT_NE(report.describe().find("kept as built: '3.running_mean'"), std::string::npos) << report.describe();
  EXPECT_NE(report.describe().find("'head.weight'"), std::string::npos) << report.describe();
}

// A file that does not fit changes nothing and names the tensor with both shapes, the missing
// parameter, or the file.
TEST(WarmStart, AFileThatDoesNotFitIsRefusedByNameAndChangesNothing) {
  TempDir dir;
  auto wider = make_net(1, /*hidden=*/4);
  const std::string wide = dir.str() + "/wide.safetensors";
  mlh::rt::export_module_weights(*wider, wide);
  auto target = make_net(2);
  const auto before = tensors_of(*target);
  std::string message;
  EXPECT_EQ(code_of([&] { load_weights_into(*target, read_weights_file(wide)); }, &message),
            MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find(wide), std::string::npos) << message;
  EXPECT_NE(message.find("tensor '0.weight' is [4, 2] in the file, [3, 2] in the model"), std::string::npos)
      << message;
  for (const auto& [name, t] : before) EXPECT_TRUE(at::equal(t, tensors_of(*target).at(name))) << name;

  auto source = make_net(1);
  auto tensors = tensors_of(*source);
  tensors.erase("2.bias");
  const std::string partial = dir.str() + "/partial.pt";
  write_torch_state_dict(partial, tensors, "");
  EXPECT_EQ(code_of([&] { load_weights_into(*target, read_weights_file(partial)); }, &message),
            MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("no tensor for the model's parameter '2.bias'"), std::string::npos) << message;

  // A file wrong in several ways: every one is named in the one refusal.
  auto several = tensors_of(*make_net(1, /*hidden=*/4));
  several.erase("2.bias");
  several["extra.weight"] = at::ones({2});
  const std::string misfit = dir.str() + "/misfit.pt";
  write_torch_state_dict(misfit, several, "");
  EXPECT_EQ(code_of([&] { load_weights_into(*target, read_weights_file(misfit)); }, &message),
            MLH_ERR_INVALID_ARGUMENT);
  for (const char* part : {"mismatches:", "tensor '0.weight' is [4, 2] in the file, [3, 2] in the model",
                           "tensor '2.weight' is [1, 4] in the file, [1, 3] in the model",
                           "no tensor for the model's parameter '2.bias'", "no place for: 'extra.weight'"})
    EXPECT_NE(message.find(part), std::string::npos) << part << " in:\n" << message;
  for (const auto& [name, t] : before) EXPECT_TRUE(at::equal(t, tensors_of(*target).at(name))) << name;

  const std::string text = dir.str() + "/notes.txt";
  std::ofstream(text) << "these are not weights\n";
  EXPECT_EQ(code_of([&] { read_weights_file(text); }, &message), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("'" + text + "': not a weights file"), std::string::npos) << message;
  EXPECT_EQ(code_of([&] { read_weights_file(dir.str() + "/absent.safetensors"); }, &message), MLH_ERR_IO);
  EXPECT_NE(message.find("absent.safetensors"), std::string::npos) << message;

  // A torch.save archive cut short (a copy interrupted): named, not a crash.
  {
    std::ifstream in(partial, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string cut = dir.str() + "/cut.pt";
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    EXPECT_EQ(code_of([&] { read_weights_file(cut); }, &message), MLH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message.find("'" + cut + "'"), std::string::npos) << message;
  }

  // torch.save of something that is not a dict of tensors.
  const std::string tensor_file = dir.str() + "/tensor.pt";
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(at::ones({2})));
  std::ofstream(tensor_file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(code_of([&] { read_weights_file(tensor_file); }, &message), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("not a state dict"), std::string::npos) << message;
}

TEST(WarmStart, FreezeByNamePrefixOrGlobAndAPatternThatNamesNothingIsRefused) {
  TempDir dir;
  auto source = make_net(1);
  const std::string path = dir.str() + "/model.safetensors";
  mlh::rt::export_module_weights(*source, path);
  const auto file = read_weights_file(path);
  {
    auto target = make_net(2);
    const auto report = load_weights_into(*target, file, {"0", "*.bias"});
    EXPECT_EQ(report.frozen, (std::vector<std::string>{"0.weight", "0.bias", "2.bias", "3.bias"}));
    for (const auto& p : target->named_parameters())
      EXPECT_EQ(p.value().requires_grad(), p.key() == "2.weight" || p.key() == "3.weight") << p.key();
  }
  auto target = make_net(2);
  const auto before = tensors_of(*target);
  std::string message;
  EXPECT_EQ(code_of([&] { load_weights_into(*target, file, {"encoder"}); }, &message), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("--freeze 'encoder' names no parameter"), std::string::npos) << message;
  for (const auto& [name, t] : before) EXPECT_TRUE(at::equal(t, tensors_of(*target).at(name))) << name;
}

// Through the session, as an algorithm calls it: the plan's init_from loads, logs and freezes,
// and the frozen parameter keeps its value through training steps.
TEST(WarmStart, TheSessionLoadsThePlansFileAndFrozenWeightsDoNotTrain) {
  TempDir dir;
  auto source = make_net(1);
  const std::string path = dir.str() + "/source.safetensors";
  mlh::rt::export_module_weights(*source, path);

  FakeHost host;
  mlh_host_callbacks callbacks = host.callbacks();
  const nlohmann::json plan_json = {{"torch_device", "cpu"}, {"init_from", {{"path", path}, {"freeze", {"0"}}}}};
  const std::string plan_text = plan_json.dump(), run_dir = dir.str() + "/run";
  std::filesystem::create_directories(run_dir);
  mlh_run_context c{};
  c.struct_size = sizeof(c);
  c.command = "train";
  c.config_json = "{}";
  c.device_json = "{}";
  c.torch_device = "cpu";
  c.plan_json = plan_text.c_str();
  c.run_dir = run_dir.c_str();
  c.world_size = 1;
  c.host = &callbacks;
  mlh::RunContext ctx(c);
  const auto plan = mlh::rt::RuntimePlan::parse(plan_text);
  ASSERT_TRUE(plan.init_from);
  mlh::rt::TrainingSession session(ctx, plan);
  auto net = make_net(2);
  session.init_weights(*net);
  EXPECT_TRUE(same(*source, *net));
  bool logged = false;
  for (const std::string& l : host.logs)
    logged |= l.find("--init-from '" + path + "' (safetensors): 9 tensors; frozen: 2 parameters") != std::string::npos;
  EXPECT_TRUE(logged) << (host.logs.empty() ? "" : host.logs.back());

  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(0.1));
  const at::Tensor frozen = net->ptr(0)->named_parameters()["weight"].clone();
  const at::Tensor trained = net->ptr(2)->named_parameters()["weight"].clone();
  for (int i = 0; i < 3; ++i) {
    optimizer.zero_grad();
    net->forward(at::randn({8, 2})).pow(2).mean().backward();
    optimizer.step();
  }
  EXPECT_TRUE(at::equal(net->ptr(0)->named_parameters()["weight"], frozen));
  EXPECT_FALSE(at::equal(net->ptr(2)->named_parameters()["weight"], trained));

  // Malformed plan values are named.
  for (const char* bad : {R"({"init_from": {"path": ""}})", R"({"init_from": {"path": "a", "freeze": "x"}})"}) {
    std::string message;
    EXPECT_NE(code_of([&] { mlh::rt::RuntimePlan::parse(bad); }, &message), MLH_OK) << bad;
    EXPECT_NE(message.find("init_from"), std::string::npos) << message;
  }
}

}  // namespace
