#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <mlh/crc32c.hpp>
#include <mlh/plugin.hpp>
#include <mlh/runtime/checkpoint.hpp>

#include "temp_dir.hpp"

namespace fs = std::filesystem;
using mlh::rt::CheckpointManager;
using mlh::rt::TrainingState;

namespace {

struct NetImpl : torch::nn::Module {
  explicit NetImpl(int64_t hidden = 8) {
    fc1 = register_module("fc1", torch::nn::Linear(4, hidden));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, 1));
    seen = register_buffer("seen", at::zeros({1}));
  }
  at::Tensor forward(const at::Tensor& x) {
    seen += x.size(0);
    return fc2(at::tanh(fc1(x)));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  at::Tensor seen;
};
TORCH_MODULE(Net);

// Draws its data from the global generator, so that resuming exactly needs its state.
void train(Net& net, torch::optim::Optimizer& opt, int from, int to) {
  for (int step = from; step < to; ++step) {
    const at::Tensor x = at::randn({16, 4});
    const at::Tensor y = at::sin(x.sum(1, true));
    const at::Tensor loss = (net->forward(x) - y).pow(2).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
}

void expect_same_parameters(const torch::nn::Module& a, const torch::nn::Module& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& p : pa) EXPECT_TRUE(at::equal(p.value(), pb[p.key()])) << p.key();
  for (const auto& buf : a.named_buffers())
    EXPECT_TRUE(at::equal(buf.value(), b.named_buffers()[buf.key()])) << buf.key();
}

at::Generator cpu_generator() { return at::detail::getDefaultCPUGenerator(); }

struct Warnings {
  std::vector<std::string> messages;
  mlh::rt::WarningFn fn() {
    return [this](const std::string& m) { messages.push_back(m); };
  }
};

std::string step_name(int64_t step) {
  char name[40];
  std::snprintf(name, sizeof name, "step-%09lld.ckpt", static_cast<long long>(step));
  return name;
}

}  // namespace

TEST(TrainingStateArchive, RoundTripsModelOptimizerTensorsAndValues) {
  at::manual_seed(3);
  Net net;
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-2));
  train(net, adam, 0, 3);
  TrainingState saved;
  saved.add("model", *net).add("adam", adam);
  saved.tensors = {{"cpu", cpu_generator().get_state()}, {"cuda:0", at::arange(5)}};
  saved.values = {{"step", 3}, {"scaler", {{"scale", 65536.0}}}, {"lr", 0.01}};
  std::stringstream stream;
  mlh::rt::save_training_state(saved, stream);

  at::manual_seed(4);
  Net other;
  torch::optim::Adam other_adam(other->parameters(), torch::optim::AdamOptions(1e-2));
  TrainingState loaded;
  loaded.add("model", *other).add("adam", other_adam);
  mlh::rt::load_training_state(loaded, stream, at::kCPU);

  expect_same_parameters(*net, *other);
  EXPECT_EQ(loaded.values, saved.values);
  ASSERT_EQ(loaded.tensors.size(), 2u);
  EXPECT_TRUE(at::equal(loaded.tensors["cpu"], saved.tensors["cpu"]));
  EXPECT_TRUE(at::equal(loaded.tensors["cuda:0"], at::arange(5)));
  // Equal Adam state (moments, step counts) shows as equal parameters after one more step.
  at::manual_seed(5);
  train(net, adam, 3, 4);
  at::manual_seed(5);
  train(other, other_adam, 3, 4);
  expect_same_parameters(*net, *other);
}

TEST(TrainingStateArchive, RejectsACheckpointOfAnotherShapeWithoutTouchingTheModel) {
  Net net;
  TrainingState saved;
  saved.add("model", *net);
  std::stringstream stream;
  mlh::rt::save_training_state(saved, stream);

  Net wider(16);
  const at::Tensor before = wider->fc1->weight.clone();
  TrainingState loaded;
  loaded.add("model", *wider);
  try {
    mlh::rt::load_training_state(loaded, stream, at::kCPU);
    FAIL() << "expected an error";
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("model.fc1.weight"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(at::equal(wider->fc1->weight, before));
  EXPECT_THROW(TrainingState().add("a.b", *net), mlh::Error);
}

TEST(CheckpointManager, ResumedTrainingEqualsUninterruptedTraining) {
  constexpr int kSteps = 20, kCrashAt = 8;
  at::manual_seed(1);
  Net reference;
  torch::optim::Adam reference_adam(reference->parameters(), torch::optim::AdamOptions(1e-2));
  train(reference, reference_adam, 0, kSteps);

  TempDir dir;
  {
    at::manual_seed(1);
    Net net;
    torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-2));
    train(net, adam, 0, kCrashAt);
    TrainingState state;
    state.add("model", *net).add("adam", adam);
    state.tensors["cpu_rng"] = cpu_generator().get_state();
    state.values["step"] = kCrashAt;
    CheckpointManager(dir.path()).save(state, kCrashAt);
  }  // the "crash": every object of the first run is gone

  at::manual_seed(12345);  // a new process: other weights, another generator state
  Net net;
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-2));
  TrainingState state;
  state.add("model", *net).add("adam", adam);
  const auto loaded = CheckpointManager(dir.path()).load_latest(state, at::kCPU);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->step, kCrashAt);
  EXPECT_EQ(state.values["step"], kCrashAt);
  cpu_generator().set_state(state.tensors.at("cpu_rng"));
  train(net, adam, kCrashAt, kSteps);
  expect_same_parameters(*reference, *net);
}

TEST(CheckpointManager, WritesTheDocumentedHeader) {
  TempDir dir;
  TrainingState state;
  state.values["x"] = 1;
  const std::string path = CheckpointManager(dir.path()).save(state, 123, 0.5);
  EXPECT_EQ(fs::path(path).filename(), "step-000000123.ckpt");
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 40u);
  EXPECT_EQ(bytes.substr(0, 8), "MLHCKPT1");
  uint64_t length = 0;
  int64_t step = 0;
  double metric = 0;
  uint32_t crc = 0;
  std::memcpy(&length, bytes.data() + 8, 8);
  std::memcpy(&step, bytes.data() + 16, 8);
  std::memcpy(&metric, bytes.data() + 24, 8);
  std::memcpy(&crc, bytes.data() + 36, 4);
  EXPECT_EQ(length, bytes.size() - 40);
  EXPECT_EQ(step, 123);
  EXPECT_EQ(metric, 0.5);
  EXPECT_EQ(crc, mlh::crc32c(bytes.data(), 36, mlh::crc32c(bytes.data() + 40, length)));
}

TEST(CheckpointManager, SkipsCorruptOrTruncatedNewestWithAWarning) {
  TempDir dir;
  Warnings warnings;
  CheckpointManager manager(dir.path(), 3, mlh::rt::Goal::Minimize, warnings.fn());
  Net net;
  TrainingState state;
  state.add("model", *net);
  for (int step = 1; step <= 3; ++step) {
    state.values["step"] = step;
    manager.save(state, step);
  }
  const std::string newest = manager.dir() + "/" + step_name(3), middle = manager.dir() + "/" + step_name(2);
  {  // flip bytes in the middle of the archive
    std::fstream f(newest, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(fs::file_size(newest) / 2));
    f.write("\xde\xad\xbe\xef", 4);
  }
  fs::resize_file(middle, fs::file_size(middle) - 100);

  Net fresh;
  TrainingState target;
  target.add("model", *fresh);
  auto loaded = manager.load_latest(target, at::kCPU);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->step, 1);
  EXPECT_EQ(target.values["step"], 1);
  expect_same_parameters(*net, *fresh);
  ASSERT_EQ(warnings.messages.size(), 2u);
  EXPECT_NE(warnings.messages[0].find(step_name(3)), std::string::npos) << warnings.messages[0];
  EXPECT_NE(warnings.messages[0].find("checksum"), std::string::npos) << warnings.messages[0];
  EXPECT_NE(warnings.messages[1].find(step_name(2)), std::string::npos) << warnings.messages[1];
  EXPECT_NE(warnings.messages[1].find("truncated"), std::string::npos) << warnings.messages[1];

  std::ofstream(manager.dir() + "/" + step_name(1), std::ios::trunc)
      << "not a checkpoint at all, but long enough to have a header";
  warnings.messages.clear();
  EXPECT_FALSE(manager.load_latest(target, at::kCPU));
  ASSERT_EQ(warnings.messages.size(), 3u);
  EXPECT_NE(warnings.messages[2].find("not a checkpoint"), std::string::npos) << warnings.messages[2];
}

TEST(CheckpointManager, KeepsTheLastNAndTheBest) {
  TempDir dir;
  CheckpointManager manager(dir.path(), 2);
  TrainingState state;
  const double metrics[] = {5, 3, 1, 4, 6, 7};
  for (int step = 1; step <= 6; ++step) {
    state.values["step"] = step;
    manager.save(state, step, metrics[step - 1]);
  }
  manager.save(state, 7);  // no metric: never the best
  const std::vector<std::string> expected = {manager.dir() + "/" + step_name(7), manager.dir() + "/" + step_name(6)};
  EXPECT_EQ(manager.step_files(), expected);
  auto best = manager.load_best(state, at::kCPU);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->step, 3);
  EXPECT_EQ(best->metric, 1.0);
  EXPECT_EQ(state.values["step"], 3);
  EXPECT_EQ(manager.load_latest(state, at::kCPU)->step, 7);

  TempDir dir2;
  CheckpointManager maximize(dir2.path(), 2, mlh::rt::Goal::Maximize);
  for (int step = 1; step <= 6; ++step) maximize.save(state, step, metrics[step - 1]);
  EXPECT_EQ(maximize.load_best(state, at::kCPU)->step, 6);
}

// A writer killed mid-save leaves "<name>.tmp-<pid>"; the next save removes those of dead
// writers and leaves those of live ones (a write in progress) alone.
TEST(CheckpointManager, SavingRemovesTempFilesOfDeadWriters) {
  TempDir dir;
  CheckpointManager manager(dir.path(), 2);
  TrainingState state;
  manager.save(state, 1);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // reaped: its pid names no process now
  const fs::path dead = fs::path(manager.dir()) / (step_name(2) + ".tmp-" + std::to_string(child));
  const fs::path alive = fs::path(manager.dir()) / (step_name(3) + ".tmp-" + std::to_string(::getppid()));
  const fs::path other = fs::path(manager.dir()) / "notes.tmp-file";
  for (const fs::path& p : {dead, alive, other}) std::ofstream(p) << "partial";
  manager.save(state, 4);
  EXPECT_FALSE(fs::exists(dead)) << dead;
  EXPECT_TRUE(fs::exists(alive)) << "a live process's write must not be touched";
  EXPECT_TRUE(fs::exists(other)) << "only <name>.tmp-<pid> files are ours";
  EXPECT_EQ(manager.load_latest(state, at::kCPU)->step, 4);
}

TEST(CheckpointManager, AFailingSaveThrowsAndKeepsEarlierCheckpoints) {
  TempDir dir;
  CheckpointManager manager(dir.path());
  TrainingState state;
  state.values["step"] = 1;
  manager.save(state, 1);
  // A folder where the file should go makes the rename fail, even for root.
  fs::create_directories(manager.dir() + "/" + step_name(2) + "/blocker");
  state.values["step"] = 2;
  try {
    manager.save(state, 2);
    FAIL() << "expected an error";
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_IO);
    EXPECT_NE(std::string(e.what()).find(step_name(2)), std::string::npos) << e.what();
  }
  for (const auto& entry : fs::directory_iterator(manager.dir()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  const auto loaded = manager.load_latest(state, at::kCPU);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->step, 1);
}

TEST(CheckpointManager, SigkillWhileWritingLeavesTheLastCheckpointLoadable) {
  TempDir dir;
  const at::Tensor big = at::arange(4'000'000, at::kFloat);  // 16 MB: writing takes a while
  TrainingState state;
  state.tensors["big"] = big;
  state.values["step"] = 1;
  CheckpointManager(dir.path()).save(state, 1);

  std::mt19937 rng(7);
  int interrupted_writes = 0;
  for (int round = 0; round < 6; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // the child saves until killed; it must never return into gtest
      try {
        CheckpointManager manager(dir.path());
        for (int64_t step = 2 + round * 1000;; ++step) {
          state.values["step"] = step;
          manager.save(state, step);
        }
      } catch (...) {
      }
      ::_exit(1);
    }
    ::usleep(std::uniform_int_distribution<useconds_t>(0, 400'000)(rng));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child stopped by itself";

    for (const auto& entry : fs::directory_iterator(dir.str() + "/checkpoints"))
      interrupted_writes += entry.path().filename().string().find(".tmp-") != std::string::npos;
    Warnings warnings;
    CheckpointManager manager(dir.path(), 3, mlh::rt::Goal::Minimize, warnings.fn());
    for (const std::string& path : manager.step_files()) {  // every file named like one is whole
      TrainingState target;
      const auto loaded = manager.load_latest(target, at::kCPU);
      ASSERT_TRUE(loaded) << path;
      EXPECT_EQ(target.values["step"], loaded->step);
      EXPECT_TRUE(at::equal(target.tensors.at("big"), big));
      fs::remove(path);
    }
    EXPECT_TRUE(warnings.messages.empty()) << warnings.messages.front();
    state.values["step"] = 1;
    manager.save(state, 1);  // also removes the killed child's temporary
  }
  std::cout << "[          ] " << interrupted_writes << " of 6 kills hit a checkpoint being written\n";
}

TEST(CheckpointManager, LoadsOntoTheCpu) {
  TempDir dir;
  Net net;
  const bool cuda = torch::cuda::is_available();
  // With CUDA the saved tensors live there and load_from(..., device) remaps them; without,
  // the same call runs with CPU on both sides.
  if (cuda) net->to(at::kCUDA);
  TrainingState state;
  state.add("model", *net);
  state.tensors["rng"] = at::ones({3}, cuda ? at::kCUDA : at::kCPU);
  CheckpointManager(dir.path()).save(state, 5);

  Net cpu_net;
  TrainingState target;
  target.add("model", *cpu_net);
  ASSERT_TRUE(CheckpointManager(dir.path()).load_latest(target, at::kCPU));
  for (const auto& p : cpu_net->parameters()) EXPECT_TRUE(p.device().is_cpu());
  EXPECT_TRUE(target.tensors.at("rng").device().is_cpu());
  net->to(at::kCPU);
  expect_same_parameters(*net, *cpu_net);
}

TEST(CheckpointManager, AFullDiskIsAnIoErrorAndKeepsEarlierCheckpoints) {
  TempDir dir;
  TrainingState state;
  state.values["step"] = 1;
  CheckpointManager(dir.path()).save(state, 1);
  state.tensors["big"] = at::zeros({1'000'000});
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // a file size limit stands in for a full disk: writes fail with EFBIG
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1 << 20, 1 << 20};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      CheckpointManager(dir.path()).save(state, 2);
    } catch (const mlh::Error& e) {
      // The file, the disk's free space, and that the run resumes from the earlier ones.
      const std::string what = e.what();
      const bool named = what.find(step_name(2)) != std::string::npos && what.find("MiB free of") != std::string::npos &&
                         what.find("--resume") != std::string::npos;
      ::_exit(e.code() == MLH_ERR_IO && named ? 0 : 2);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(4);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "0: an IO error naming the file; 2: another error; 3: another exception; 4: none";
  CheckpointManager manager(dir.path());
  EXPECT_EQ(manager.step_files(), std::vector<std::string>{manager.dir() + "/" + step_name(1)});
  for (const auto& entry : fs::directory_iterator(manager.dir()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  TrainingState target;
  EXPECT_EQ(manager.load_latest(target, at::kCPU)->step, 1);
}
