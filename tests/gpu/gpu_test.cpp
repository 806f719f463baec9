// GPU-only tests: on a machine with an NVIDIA GPU and a CUDA LibTorch they check the whole
// product on the GPU; elsewhere each one skips and says why. scripts/gpu.sh runs them.
//  - the cuda plugin's records match what the CUDA runtime (through LibTorch) reports, and
//    the host chooses cuda:0;
//  - fp16 (with the gradient scaler) and bf16 autocast train protonet, ppo and trm for a few
//    steps without NaN;
//  - the plan's memory fraction caps the allocator: an allocation beyond it fails cleanly;
//  - under a small memory fraction a training step backs off to smaller micro-batches, and
//    --batch-size auto finds a batch that fits;
//  - gradient checkpointing lowers the peak memory of a TRM training step;
//  - a checkpoint trained on the GPU evaluates on the CPU;
//  - NCCL initializes for a single-rank group;
//  - ProtoNet's training episode replayed as a CUDA graph trains as the eager step;
//  - the plan's GPU settings take effect in the worker (pinned copies, cache release,
//    cuDNN benchmarking, TF32, channels-last, data workers, the CPU side's OpenMP binding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <torch/cuda.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/compat.hpp>
#include <mlh/runtime/distributed.hpp>
#include <mlh/runtime/memory.hpp>

#if MLH_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include "algorithm_host_test.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The JSON read back is not const on purpose: a missing key then reads as null and fails the
// check, where const operator[] on a missing key is undefined behaviour (a crash in Release).

// Skips the test unless LibTorch has CUDA and sees a GPU, saying which is missing.
#define REQUIRE_GPU()                                                                                   \
  do {                                                                                                  \
    if (!MLH_TORCH_HAS_CUDA) GTEST_SKIP() << "GPU-only test: this LibTorch was built without CUDA";    \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "GPU-only test: LibTorch sees no CUDA GPU here"; \
  } while (0)

HostResult host(const std::string& args) { return run_host(MLH_GPU_HOST_BIN, MLH_GPU_PLUGIN_DIR, args); }

class Gpu : public HostTempDirTest {
 protected:
  Gpu() : HostTempDirTest("mlhost-gpu-") {}

  json probe() {
    const HostResult r = host("--probe --json");
    EXPECT_EQ(r.rc, 0) << r.output;
    return json::parse(r.output.substr(r.output.find('{')), nullptr, false);
  }

  // Trains `args` and returns its summary; fails the test unless it completed with a finite loss.
  json train(const std::string& what, const std::string& args) {
    const HostResult r = host(args);
    EXPECT_EQ(r.rc, 0) << what << "\n" << r.output;
    const json s = read_json_file(args.substr(args.find("--run-dir ") + 10, args.find(' ', args.find("--run-dir ") + 10) -
                                                                                 args.find("--run-dir ") - 10) +
                                  "/summary.json");
    EXPECT_EQ(s.value("status", ""), "completed") << what << ": " << s.dump();
    // A named copy: items() of the temporary value() returns would outlive it in the loop.
    const json last_metrics = s.value("last_metrics", json::object());
    for (const auto& [name, value] : last_metrics.items()) {
      if (name.find("loss") != std::string::npos) {
        EXPECT_TRUE(value.is_number() && std::isfinite(value.get<double>())) << what << ": " << name << " = " << value;
      }
    }
    return s;
  }
};

TEST_F(Gpu, ProbeRecordsMatchTheCudaRuntimeAndTheHostChoosesCuda) {
  REQUIRE_GPU();
#if MLH_TORCH_HAS_CUDA
  json report = probe();
  ASSERT_FALSE(report.is_discarded());
  int64_t cuda_devices = 0;
  for (json& d : report["devices"]) {
    if (d.value("kind", "") != "cuda") continue;
    ++cuda_devices;
    const int index = d["index"];
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
    EXPECT_EQ(d["name"], std::string(p->name)) << d.dump(2);
    EXPECT_EQ(d["memory_total_bytes"].get<int64_t>(), static_cast<int64_t>(p->totalGlobalMem)) << d.dump(2);
    EXPECT_EQ(d["compute_capability"], std::to_string(p->major) + "." + std::to_string(p->minor)) << d.dump(2);
    EXPECT_EQ(d["compute_units"], p->multiProcessorCount);
    EXPECT_EQ(d["torch_device"], "cuda:" + std::to_string(index));
  }
  EXPECT_EQ(cuda_devices, static_cast<int64_t>(torch::cuda::device_count()));
  EXPECT_EQ(report["chosen"], "cuda:0") << report.dump(2);
#endif
}

TEST_F(Gpu, Fp16AndBf16TrainEveryAlgorithmWithoutNan) {
  REQUIRE_GPU();
  const std::string data = dir_ + "/sudoku";
  const HostResult b = host("--algorithm trm --command build-data --device cpu --run-dir " + dir_ + "/build" +
                            " --set build.train=200 --set build.test=20 --set data.dir=" + data);
  ASSERT_EQ(b.rc, 0) << b.output;
  const char* mnist = std::getenv("MLH_FASHION_MNIST_DIR");
  const std::string mnist_dir = mnist ? mnist : "/usr/share/datasets/fashion-mnist";
  const bool have_mnist = fs::exists(mnist_dir + "/train-images-idx3-ubyte.gz");
  for (const std::string precision : {"fp16", "bf16"}) {
    const std::string common = " --device cuda --precision " + precision + " --run-dir " + dir_ + "/";
    train("trm " + precision, "--algorithm trm" + common + "trm-" + precision + " --set preset=sudoku-easy --set data.dir=" +
                                  data + " --set train_steps=20 --set eval_every=10 --set model.hidden=64");
    json ppo = train("ppo " + precision, "--algorithm ppo" + common + "ppo-" + precision +
                                             " --set preset=puzzle4 --set network.hidden_dim=32 --set network.num_heads=2"
                                             " --set total_timesteps=2048 --set num_envs=8 --set num_steps=32")["result"];
    // The update's minibatches replay a CUDA graph in bf16; fp16's loss scaling keeps them eager.
    if (precision == "bf16")
      EXPECT_GT(ppo["cuda_graph"]["replays"].get<int64_t>(), 0) << ppo["cuda_graph"].dump();
    else
      EXPECT_NE(ppo["cuda_graph"]["off"].get<std::string>().find("fp16"), std::string::npos) << ppo["cuda_graph"].dump();
    if (!have_mnist) {
      std::printf("protonet %s skipped: no Fashion-MNIST in %s (set MLH_FASHION_MNIST_DIR)\n", precision.c_str(),
                  mnist_dir.c_str());
      continue;
    }
    const std::string f = " --set data.root=" + mnist_dir + "/train-images-idx3-ubyte.gz --set data.labels=" + mnist_dir +
                          "/train-labels-idx1-ubyte.gz --set data.test_root=" + mnist_dir +
                          "/t10k-images-idx3-ubyte.gz --set data.test_labels=" + mnist_dir + "/t10k-labels-idx1-ubyte.gz";
    train("protonet " + precision, "--algorithm protonet" + common + "protonet-" + precision + f +
                                       " --set epochs=2 --set episodes_per_epoch=20 --set val_episodes=5");
  }
}

// The plan's GPU settings take effect inside the worker (docs/plan.md, "What each field does";
// the runtime's report in summary.json): batches copied from pinned memory, the cache
// released every N steps, cuDNN benchmarking and TF32 switched on, channels-last weights,
// the CPU side's OpenMP binding; none of them marked as without effect.
TEST_F(Gpu, PlanFieldsTakeEffectOnCuda) {
  REQUIRE_GPU();
  const std::string data = dir_ + "/sudoku";
  ASSERT_EQ(host("--algorithm trm --command build-data --device cpu --run-dir " + dir_ + "/build" +
                 " --set build.train=100 --set build.test=10 --set data.dir=" + data)
                .rc,
            0);
  std::ofstream(dir_ + "/hw.ini") << "empty_cache_steps = 2\ndataloader_workers = 2\nomp_proc_bind = close\n"
                                     "channels_last = true\n";
  const std::string common = " --device cuda --hardware-config " + dir_ + "/hw.ini --run-dir " + dir_ + "/";
  train("trm", "--algorithm trm" + common + "trm --set preset=sudoku-easy --set data.dir=" + data +
                   " --set train_steps=10 --set eval_every=0 --set model.hidden=64");
  json trm = plan_applied(dir_ + "/trm");
  EXPECT_GE(trm["pinned_memory"]["pinned_copies"].get<int64_t>(), 3 * 10) << "three tensors a step: " << trm.dump(2);
  EXPECT_GE(trm["empty_cache_steps"]["cache_clears"].get<int64_t>(), 5) << trm.dump(2);
  EXPECT_GE(trm["dataloader_workers"]["batches_by_workers"].get<int64_t>(), 10) << trm.dump(2);
  EXPECT_EQ(trm["cudnn_benchmark"], true) << trm.dump(2);
  EXPECT_EQ(trm["omp_proc_bind"], "close") << trm.dump(2);
  json plan = read_json_file(dir_ + "/trm/plan.json");
  // TRM has no convolutions: cuDNN benchmarking is marked as without effect there, and PPO checks it.
  for (const char* field : {"pinned_memory", "empty_cache_steps", "dataloader_workers"})
    EXPECT_FALSE(plan["no_effect"].contains(field)) << field << ": " << plan["no_effect"].dump(2);
  EXPECT_TRUE(plan["no_effect"].contains("cudnn_benchmark")) << plan["no_effect"].dump(2);
  if (plan["tf32_matmul"] == true) {
    EXPECT_EQ(trm["tf32_matmul"], true) << trm.dump(2);
  }

  train("ppo", "--algorithm ppo" + common + "ppo --set preset=puzzle4 --set network.hidden_dim=32"
                   " --set network.num_heads=2 --set total_timesteps=2048 --set num_envs=8 --set num_steps=32");
  json ppo = plan_applied(dir_ + "/ppo");
  EXPECT_GT(ppo["channels_last"]["tensors_converted"].get<int64_t>(), 0) << "the recursive net's stem: " << ppo.dump(2);
  EXPECT_GT(ppo["pinned_memory"]["pinned_copies"].get<int64_t>(), 0) << ppo.dump(2);
  EXPECT_EQ(ppo.value("cudnn_benchmark", json()), true) << ppo.dump(2);
  EXPECT_FALSE(read_json_file(dir_ + "/ppo/plan.json")["no_effect"].contains("cudnn_benchmark"));
}

// ProtoNet's training episode as a replayed CUDA graph (the plan's cuda_graphs, on by default
// on CUDA) trains as the eager step does: the same seed and episodes, deterministic cuDNN,
// the same losses and validation accuracy within rounding, the learning rate halved twice
// inside the replays; the graphed run replayed nearly every episode, the eager one none.
TEST_F(Gpu, ProtonetEpisodeGraphTrainsAsTheEagerStep) {
  REQUIRE_GPU();
  const char* mnist = std::getenv("MLH_FASHION_MNIST_DIR");
  const std::string m = mnist ? mnist : "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(m + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "no Fashion-MNIST in " << m;
  json runs[2];
  for (int graphs = 0; graphs < 2; ++graphs) {
    const std::string run = dir_ + (graphs ? "/graphs" : "/eager");
    std::ofstream(run + ".ini") << "deterministic = true\ncuda_graphs = " << (graphs ? "true" : "false") << "\n";
    runs[graphs] = train(run, "--algorithm protonet --device cuda --precision fp32 --set seed=5 --hardware-config " + run +
                                  ".ini --run-dir " + run + " --set data.root=" + m +
                                  "/train-images-idx3-ubyte.gz --set data.labels=" + m +
                                  "/train-labels-idx1-ubyte.gz --set epochs=2 --set episodes_per_epoch=30"
                                  " --set val_episodes=20 --set lr_halve_every=20");
  }
  json eager = runs[0]["result"], graphed = runs[1]["result"];
  EXPECT_EQ(eager["cuda_graph"]["replays"], 0) << eager.dump(2);
  EXPECT_GE(graphed["cuda_graph"]["replays"].get<int64_t>(), 60 - 4) << graphed.dump(2);
  EXPECT_EQ(graphed["cuda_graph"]["off"], "") << graphed.dump(2);
  const double a = eager["train_loss"].get<double>(), b = graphed["train_loss"].get<double>();
  EXPECT_NEAR(b, a, 1e-3 * (1 + std::abs(a))) << "train loss, eager " << a << " and graphed " << b;
  EXPECT_NEAR(graphed["best_val_acc"].get<double>(), eager["best_val_acc"].get<double>(), 0.01);
  std::printf("protonet 60 episodes: train loss eager %.6f, graphed %.6f; %lld replays\n", a, b,
              static_cast<long long>(graphed["cuda_graph"]["replays"].get<int64_t>()));
}

TEST_F(Gpu, MemoryFractionCapsTheAllocator) {
  REQUIRE_GPU();
  mlh::rt::RuntimePlan plan;
  plan.torch_device = "cuda:0";
  plan.device = c10::Device("cuda:0");
  plan.memory_fraction = 0.05;
  mlh::rt::apply_plan(plan);
#if MLH_TORCH_HAS_CUDA
  const int64_t total = static_cast<int64_t>(at::cuda::getDeviceProperties(0)->totalGlobalMem);
  // Within the cap: fine. Beyond it: an out-of-memory error LibTorch throws, not a crash.
  EXPECT_NO_THROW(at::empty({total / 50}, at::TensorOptions().dtype(at::kByte).device(plan.device)));
  EXPECT_THROW(at::empty({total / 10}, at::TensorOptions().dtype(at::kByte).device(plan.device)), c10::Error);
  // The process goes on: a small allocation still works after the refusal.
  EXPECT_NO_THROW(at::ones({1024}, plan.device).sum().item<float>());
#endif
}

// Under a memory_fraction of 5%, toyreg steps whose stand-in activations (row_bytes a row)
// need 1.6x the cap at batch 64 back off to micro-batches that fit, and --batch-size auto
// finds a batch under the cap whose doubling does not fit.
TEST_F(Gpu, OutOfMemoryBacksOffAndTheFinderStaysUnderTheFraction) {
  REQUIRE_GPU();
#if MLH_TORCH_HAS_CUDA
  const int64_t total = static_cast<int64_t>(at::cuda::getDeviceProperties(0)->totalGlobalMem);
  const int64_t row_bytes = static_cast<int64_t>(0.05 * static_cast<double>(total)) / 40 / 4 * 4;
  {
    std::ofstream ini(dir_ + "/hw.ini");
    ini << "[cuda]\nmemory_fraction = 0.05\n";
  }
  const std::string toy = std::string(" --device cuda --hardware-config ") + dir_ + "/hw.ini --plugin-dir " +
                          MLH_GPU_TOYREG_DIR + " --algorithm toyreg --set row_bytes=" + std::to_string(row_bytes);
  json backed = train("back-off", "--batch-size 64 --set steps=30 --run-dir " + dir_ + "/backoff" + toy);
  EXPECT_GE(backed["result"]["oom_backoffs"].get<int64_t>(), 1) << backed.dump(2);
  EXPECT_LE(backed["result"]["micro_batch"].get<int64_t>(), 32) << backed.dump(2);
  EXPECT_EQ(backed["result"]["batch_size"], 64);

  json found = train("finder", "--batch-size auto --set steps=5 --run-dir " + dir_ + "/auto" + toy);
  json plan = read_json_file(dir_ + "/auto/plan.json");
  const int64_t batch = plan["batch_size"].get<int64_t>();
  std::printf("batch size finder on %s: %s\n", plan.value("device_name", "?").c_str(),
              plan["batch_size_finder"].value("reason", "?").c_str());
  EXPECT_GE(batch, 16) << plan["batch_size_finder"].dump(2);
  EXPECT_LT(batch, 40) << plan["batch_size_finder"].dump(2);
  EXPECT_EQ(found["result"]["oom_backoffs"], 0) << found.dump(2);
#endif
}

TEST_F(Gpu, GradientCheckpointingLowersTrmPeakMemory) {
  REQUIRE_GPU();
  // The TRM benchmark measures one training step with and without checkpointing on the
  // device it runs on and reports each peak (memory/peak_bytes).
  const HostResult r = host("--algorithm trm --benchmark --json --device cuda --precision bf16 --run-dir " + dir_ + "/bench");
  ASSERT_EQ(r.rc, 0) << r.output;
  json s = read_json_file(dir_ + "/bench/summary.json");
  json& res = s["result"];
  ASSERT_TRUE(res.contains("peak_bytes_plain") && res.contains("peak_bytes_checkpointed")) << s.dump(2);
  const double plain = res["peak_bytes_plain"], ckpt = res["peak_bytes_checkpointed"];
  std::printf("TRM step peak memory: %.0f MiB plain, %.0f MiB with checkpointing (%.0f%% lower)\n", plain / 1048576,
              ckpt / 1048576, 100 * (1 - ckpt / plain));
  EXPECT_LT(ckpt, 0.7 * plain) << "TARGETS: at least 30% lower";
}

TEST_F(Gpu, CheckpointTrainedOnTheGpuEvaluatesOnTheCpu) {
  REQUIRE_GPU();
  const std::string run = dir_ + "/toy";
  const std::string toy = std::string(" --plugin-dir ") + MLH_GPU_TOYREG_DIR + " --algorithm toyreg --run-dir " + run;
  // The cuda rule's batch (2048) is larger than toyreg's 1024 samples.
  const HostResult t = host("--device cuda --batch-size 128" + toy + " --set steps=200");
  ASSERT_EQ(t.rc, 0) << t.output;
  EXPECT_EQ(read_json_file(run + "/plan.json")["device"], "cuda:0");
  const HostResult e = host("--device cpu --command eval --resume" + toy);
  ASSERT_EQ(e.rc, 0) << e.output;
  json s = read_json_file(run + "/commands/eval-1/summary.json");
  EXPECT_LT(s["result"]["parameter_error"].get<double>(), 0.1) << s.dump(2);
}

TEST_F(Gpu, NcclInitializesForASingleRank) {
  REQUIRE_GPU();
  mlh::rt::DistributedSettings s;
  s.group_of_one = true;
  s.master_port = 29000 + ::getpid() % 1000;
  mlh::rt::Distributed dist(s, c10::Device("cuda:0"));
  EXPECT_EQ(dist.backend(), "nccl") << "this build of the runtime found no NCCL (see the CMake configure output)";
  at::Tensor t = at::full({4}, 2.0f, c10::Device("cuda:0"));
  dist.all_reduce_sum(t);
  EXPECT_EQ(t.sum().item<float>(), 8.0f);
}

}  // namespace
