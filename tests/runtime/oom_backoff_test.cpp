// Out-of-memory back-off (oom_backoff.hpp) under the CPU memory cap: a step that runs out of
// memory is redone in smaller micro-batches whose gradients add up to the same update as a
// run that used those micro-batches from the start; the optimizer's batch and learning rate
// do not change; one row that does not fit is a clear error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/memory_limit.hpp>
#include <mlh/runtime/oom_backoff.hpp>
#include <mlh/runtime/seed.hpp>

namespace {

constexpr int64_t kKiB = 1 << 10, kMiB = 1 << 20;
constexpr int64_t kRows = 64;

struct LiftCapAfterwards {
  ~LiftCapAfterwards() { mlh::rt::set_cpu_memory_limit(std::nullopt); }
};

// A small regression, optionally with batch norm (a buffer that a retry must restore), with
// noise drawn inside the step (the RNG that a retry must restore). Each micro-batch holds
// row_bytes per row of stand-in activations after the forward pass: the memory that runs out.
struct Model {
  torch::nn::Linear fc1{8, 16}, fc2{16, 1};
  torch::nn::BatchNorm1d bn{16};
  bool use_bn;
  torch::optim::SGD sgd;
  at::Tensor x, y;
  std::vector<std::string> warnings;
  std::vector<double> backoff_metric;
  mlh::rt::MicroBatchedStep micro;
  int64_t row_bytes = 0;

  Model(int64_t micro_batch, bool with_bn)
      : use_bn(with_bn),
        sgd(params(), torch::optim::SGDOptions(0.05)),
        micro([this](const std::string& w) { warnings.push_back(w); },
              [this](const std::string& name, double v) {
                if (name == "train/oom_backoffs") backoff_metric.push_back(v);
              },
              micro_batch) {
    at::manual_seed(1);
    at::NoGradGuard no_grad;
    for (auto& p : params()) p.copy_(at::randn_like(p) * 0.3);
    x = at::randn({kRows, 8});
    y = x.sum(1, true);
  }

  std::vector<at::Tensor> params() {
    auto p = fc1->parameters();
    for (auto& q : fc2->parameters()) p.push_back(q);
    for (auto& q : bn->parameters()) p.push_back(q);
    return p;
  }

  void step() {
    micro.run(kRows,
              {[&] { sgd.zero_grad(); },
               [&](int64_t begin, int64_t count, double weight) {
                 const at::Tensor xm = x.narrow(0, begin, count) + at::randn({count, 8}) * 0.01;
                 at::Tensor h = fc1->forward(xm);
                 if (use_bn) h = bn->forward(h);
                 if (row_bytes > 0) h = h + at::zeros({count, row_bytes / 4}).narrow(1, 0, 16);
                 const at::Tensor loss = (fc2->forward(h.relu()) - y.narrow(0, begin, count)).pow(2).mean();
                 (loss * weight).backward();
               },
               [&] { sgd.step(); }},
              at::kCPU, {bn.get()});
  }
};

void expect_same_parameters(Model& a, Model& b) {
  const auto pa = a.params(), pb = b.params();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(at::allclose(pa[i], pb[i], 1e-5, 1e-6)) << "parameter " << i << ": " << (pa[i] - pb[i]).abs().max().item<float>();
  EXPECT_TRUE(at::allclose(a.bn->running_mean, b.bn->running_mean, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(a.bn->running_var, b.bn->running_var, 1e-5, 1e-6));
}

// 16 rows of 256 KiB (4 MiB) fit in 6 MiB; 32 rows (8 MiB) do not.
void cap_at_six_mib() {
  mlh::rt::set_cpu_memory_limit(std::nullopt);
  mlh::rt::set_cpu_memory_limit(mlh::rt::cpu_memory_in_use() + 6 * kMiB);
}

TEST(OomBackoff, BacksOffToWhatFitsAndMatchesThoseMicroBatchesFromTheStart) {
  LiftCapAfterwards lift;
  // Batch norm makes a micro-batch's statistics its own, so the reference uses the same
  // 16-row micro-batches; the first attempt (64 rows) updated the running statistics and
  // drew noise before it ran out, which the retry must undo.
  mlh::rt::seed_everything(7);
  Model reference(16, true);
  reference.row_bytes = 256 * kKiB;
  for (int i = 0; i < 3; ++i) reference.step();

  mlh::rt::seed_everything(7);
  Model backed_off(0, true);
  backed_off.row_bytes = 256 * kKiB;
  cap_at_six_mib();
  for (int i = 0; i < 3; ++i) backed_off.step();
  mlh::rt::set_cpu_memory_limit(std::nullopt);

  EXPECT_EQ(backed_off.micro.backoffs(), 2) << "64 -> 32 -> 16";
  EXPECT_EQ(backed_off.micro.micro_batch(kRows), 16);
  EXPECT_EQ(backed_off.backoff_metric, (std::vector<double>{1, 2}));
  ASSERT_EQ(backed_off.warnings.size(), 2u);
  EXPECT_NE(backed_off.warnings[1].find("16-row micro-batches"), std::string::npos) << backed_off.warnings[1];
  EXPECT_NE(backed_off.warnings[1].find("gradients accumulated over 4"), std::string::npos) << backed_off.warnings[1];
  expect_same_parameters(backed_off, reference);
  // Same optimizer: same learning rate, one step per batch.
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::SGDOptions&>(backed_off.sgd.param_groups()[0].options()).lr(), 0.05);
}

TEST(OomBackoff, AStepThatRunsOutMidRunGoesOnFromTheSameStep) {
  LiftCapAfterwards lift;
  // Without batch norm a whole batch and its micro-batches give the same gradient: the
  // reference runs 16-row micro-batches from the start, the other whole batches until its
  // inputs grow at step 2.
  mlh::rt::seed_everything(3);
  Model reference(16, false);
  reference.row_bytes = 256 * kKiB;
  for (int i = 0; i < 5; ++i) reference.step();

  mlh::rt::seed_everything(3);
  Model backed_off(0, false);
  cap_at_six_mib();
  backed_off.row_bytes = 16 * kKiB;  // 64 rows: 1 MiB
  for (int i = 0; i < 2; ++i) backed_off.step();
  EXPECT_EQ(backed_off.micro.backoffs(), 0);
  backed_off.row_bytes = 256 * kKiB;
  for (int i = 2; i < 5; ++i) backed_off.step();
  mlh::rt::set_cpu_memory_limit(std::nullopt);

  EXPECT_EQ(backed_off.micro.backoffs(), 2);
  expect_same_parameters(backed_off, reference);
}

TEST(OomBackoff, OneRowThatDoesNotFitFailsNamingTheLimitAndTheBatch) {
  LiftCapAfterwards lift;
  Model model(0, false);
  model.row_bytes = 8 * kMiB;  // one row alone passes the 6 MiB
  const auto before = model.params()[0].clone();
  cap_at_six_mib();
  try {
    model.step();
    FAIL() << "a row of 8 MiB fitted in 6 MiB";
  } catch (const mlh::Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), MLH_ERR_OUT_OF_MEMORY);
    EXPECT_NE(what.find("micro-batches of 1 row (the batch: 64 rows)"), std::string::npos) << what;
    EXPECT_NE(what.find("CPU tensor memory limit"), std::string::npos) << what;
  }
  mlh::rt::set_cpu_memory_limit(std::nullopt);
  EXPECT_EQ(model.micro.backoffs(), 6) << "64 -> 32 -> 16 -> 8 -> 4 -> 2 -> 1";
  EXPECT_TRUE(at::equal(model.params()[0], before)) << "the optimizer stepped on a failed step";
}

TEST(OomBackoff, OtherErrorsAndDisabledBackOffPropagate) {
  Model model(0, false);
  EXPECT_THROW(model.micro.run(kRows, {[] {}, [](int64_t, int64_t, double) { throw std::runtime_error("bad input"); }, [] {}},
                               at::kCPU),
               std::runtime_error);
  EXPECT_EQ(model.micro.backoffs(), 0);
  model.micro.set_backoff(false);
  EXPECT_THROW(model.micro.run(kRows,
                               {[] {}, [](int64_t, int64_t, double) { throw c10::OutOfMemoryError({"f", "file", 1}, "CUDA out of memory"); },
                                [] {}},
                               at::kCPU),
               c10::OutOfMemoryError);
  EXPECT_EQ(model.micro.backoffs(), 0);
}

TEST(OomBackoff, RecognisesLibTorchsOutOfMemoryErrors) {
  EXPECT_TRUE(mlh::rt::is_out_of_memory(std::bad_alloc()));
  EXPECT_TRUE(mlh::rt::is_out_of_memory(std::runtime_error("CUDA out of memory. Tried to allocate 2.00 GiB")));
  EXPECT_TRUE(mlh::rt::is_out_of_memory(std::runtime_error("[enforce fail at alloc_cpu.cpp:75] DefaultCPUAllocator: not enough memory")));
  EXPECT_FALSE(mlh::rt::is_out_of_memory(std::runtime_error("shape mismatch")));
  EXPECT_FALSE(mlh::rt::is_out_of_memory(std::runtime_error("shape mismatch\nout of memory in a later line")));
}

TEST(OomBackoff, TheMicroBatchSurvivesACheckpoint) {
  mlh::rt::MicroBatchedStep step(nullptr, nullptr, 16);
  mlh::rt::MicroBatchedStep resumed;
  resumed.load_state(step.state());
  EXPECT_EQ(resumed.micro_batch(64), 16);
  EXPECT_EQ(resumed.micro_batch(8), 8);
  for (const char* bad : {R"({"micro_batch": -1, "backoffs": 0})", R"({"micro_batch": 2})", R"([1, 2])"}) {
    try {
      resumed.load_state(nlohmann::json::parse(bad));
      FAIL() << bad << " was accepted";
    } catch (const mlh::Error& e) {
      EXPECT_NE(std::string(e.what()).find("micro-batch state"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(resumed.micro_batch(64), 16) << "a bad state changed nothing";
}

}  // namespace
