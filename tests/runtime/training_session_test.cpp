// mlh::rt::TrainingSession with a real small model trained by Adam: resume (into the caller's
// state, with the log line, and when there is nothing or something unfit to resume from),
// periodic and final checkpoints, a stop request (one checkpoint, then MLH_ERR_CANCELLED; a
// failing save is its own error), memory monitoring, weight export and the summary's fields;
// then two ranks in one process (a real Gloo group over loopback): rank 0 alone writes,
// every rank stops at the same step, both resume from it, and ranks_agree notices a rank
// that drifted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/safetensors.hpp>
#include <mlh/runtime/training_session.hpp>
#include <nlohmann/json.hpp>

#include "fake_host.hpp"
#include "free_port.hpp"
#include "temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using mlh::rt::LoadedCheckpoint;
using mlh::rt::SessionOptions;
using mlh::rt::TrainingSession;
using mlh::rt::TrainingState;

// A run context around a FakeHost, for a rank of a world.
struct RunFolder {
  RunFolder(const std::string& run_dir, bool resume = false, int rank = 0, int world_size = 1) : dir(run_dir) {
    callbacks = host.callbacks();
    c.struct_size = sizeof(c);
    c.command = "train";
    c.config_json = "{}";
    c.device_json = "{}";
    c.torch_device = "cpu";
    c.plan_json = R"({"torch_device": "cpu"})";
    c.run_dir = dir.c_str();
    c.resume = resume ? 1 : 0;
    c.rank = rank;
    c.world_size = world_size;
    c.local_rank = rank;
    c.host = &callbacks;
  }
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  bool logged(const std::string& text) const {
    for (const std::string& l : host.logs)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }

  std::string dir;
  FakeHost host;
  mlh_host_callbacks callbacks{};
  mlh_run_context c{};
};

// A small model, its optimizer and its step counter: what a training loop checkpoints.
struct Model {
  explicit Model(uint64_t seed, int64_t out = 2) {
    torch::manual_seed(seed);
    net = torch::nn::Linear(3, out);
    optimizer = std::make_unique<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(0.05));
  }
  // One step on this rank's data, gradients averaged over the session's ranks.
  double train_step(TrainingSession& session, uint64_t data_seed) {
    torch::manual_seed(data_seed);
    const at::Tensor x = at::randn({8, 3}), y = x.sum(1, true).repeat({1, net->options.out_features()});
    optimizer->zero_grad();
    const at::Tensor loss = (net->forward(x) - y).pow(2).mean();
    loss.backward();
    session.dist().average_gradients(net->parameters());
    optimizer->step();
    ++step;
    return loss.item<double>();
  }
  TrainingState state() {
    TrainingState s;
    s.add("model", *net).add("optimizer", *optimizer);
    s.values = {{"step", step}};
    return s;
  }
  torch::nn::Linear net{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer;
  int64_t step = 0;
};

bool same_weights(Model& a, Model& b) {
  return at::equal(a.net->weight, b.net->weight) && at::equal(a.net->bias, b.net->bias);
}

std::vector<int64_t> saved_steps(const std::string& run_dir) {
  std::vector<int64_t> steps;
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  if (!fs::is_directory(dir)) return steps;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) == 0) steps.push_back(std::stoll(name.substr(5, 9)));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

// The status an mlh::Error thrown by `f` carries (MLH_OK when none), its message in *message.
mlh_status code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const mlh::Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return MLH_OK;
}

// Trains `steps` steps through a session, saving every `every` steps and at the last one.
void train(RunFolder& run, Model& m, int64_t steps, SessionOptions options, int64_t first_seed = 100) {
  mlh::RunContext ctx(run.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan(), std::move(options));
  while (m.step < steps) {
    const double loss = m.train_step(session, first_seed + static_cast<uint64_t>(m.step));
    ctx.progress(m.step, steps, "steps");
    session.after_step(m.step, [&] { session.save(m.state(), m.step, loss); }, m.step == steps);
  }
}

TEST(TrainingSession, SavesEveryNStepsAndTheLastKeepingTheNewest) {
  TempDir dir;
  RunFolder run(dir.path());
  Model m(1);
  train(run, m, 7, {/*keep_checkpoints=*/10, mlh::rt::Goal::Minimize, /*checkpoint_every=*/3});
  EXPECT_EQ(saved_steps(dir.path()), (std::vector<int64_t>{3, 6, 7}));
  EXPECT_TRUE(fs::exists(dir.str() + "/checkpoints/best.ckpt"));

  TempDir few;
  RunFolder run_few(few.path());
  Model m_few(1);
  train(run_few, m_few, 10, {/*keep_checkpoints=*/2, mlh::rt::Goal::Minimize, /*checkpoint_every=*/2});
  EXPECT_EQ(saved_steps(few.path()), (std::vector<int64_t>{8, 10}));

  TempDir none;
  RunFolder run_none(none.path());
  Model m_none(1);
  train(run_none, m_none, 4, {});  // checkpoint_every 0: the last step only
  EXPECT_EQ(saved_steps(none.path()), (std::vector<int64_t>{4}));
}

TEST(TrainingSession, ResumeLoadsTheNewestCheckpointIntoTheStateAndSaysWhere) {
  TempDir dir;
  RunFolder first(dir.path());
  Model trained(1);
  train(first, trained, 5, {3, mlh::rt::Goal::Minimize, 2});

  RunFolder again(dir.path(), /*resume=*/true);
  mlh::RunContext ctx(again.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan());
  Model fresh(99);  // other initial weights
  ASSERT_FALSE(same_weights(fresh, trained));
  TrainingState state = fresh.state();
  int64_t restored_at = -1;
  const auto loaded = session.resume(state, [&](const LoadedCheckpoint& c) {
    restored_at = c.values.at("step");
    fresh.step = restored_at;
    return "at step " + std::to_string(restored_at) + " of 5";
  });
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 5);
  EXPECT_EQ(restored_at, 5);
  EXPECT_EQ(state.values.at("step"), 5) << "the state's values are the checkpoint's";
  EXPECT_TRUE(same_weights(fresh, trained)) << "the model was loaded in place";
  EXPECT_TRUE(again.logged("resumed at step 5 of 5 (" + loaded->path + ")")) << again.host.logs.size();

  // The loaded optimizer state continues the run exactly: one more step on each is the same.
  RunFolder cont(dir.str() + "/cont");
  mlh::RunContext cont_ctx(cont.c);
  TrainingSession cont_session(cont_ctx, mlh::rt::RuntimePlan());
  trained.train_step(cont_session, 7);
  fresh.train_step(cont_session, 7);
  EXPECT_TRUE(same_weights(fresh, trained));
}

TEST(TrainingSession, ResumeWithoutRestoreNamesTheCheckpointsStep) {
  TempDir dir;
  RunFolder first(dir.path());
  Model trained(1);
  train(first, trained, 4, {3, mlh::rt::Goal::Minimize, 4});

  RunFolder again(dir.path(), true);
  mlh::RunContext ctx(again.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan());
  Model fresh(99);
  TrainingState state = fresh.state();
  const auto loaded = session.resume(state);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(again.logged("resumed at step 4 (" + loaded->path + ")"));
}

TEST(TrainingSession, NothingToResumeLeavesTheStateAlone) {
  TempDir dir;
  RunFolder first(dir.path());
  Model trained(1);
  train(first, trained, 2, {});

  // Without --resume the checkpoints are not read.
  RunFolder plain(dir.path(), /*resume=*/false);
  mlh::RunContext plain_ctx(plain.c);
  TrainingSession plain_session(plain_ctx, mlh::rt::RuntimePlan());
  Model fresh(99);
  TrainingState state = fresh.state();
  bool restored = false;
  EXPECT_FALSE(plain_session.resume(state, [&](const LoadedCheckpoint&) { restored = true; return ""; }));
  EXPECT_FALSE(restored);
  EXPECT_FALSE(same_weights(fresh, trained));
  EXPECT_TRUE(plain.host.logs.empty());

  // --resume on a run without checkpoints starts from the beginning, and says so.
  TempDir empty;
  RunFolder nothing(empty.path(), true);
  mlh::RunContext ctx(nothing.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan());
  EXPECT_FALSE(session.resume(state, [&](const LoadedCheckpoint&) { restored = true; return ""; }));
  EXPECT_FALSE(restored);
  EXPECT_TRUE(nothing.logged("no checkpoint to resume from")) << (nothing.host.logs.empty() ? "" : nothing.host.logs[0]);
}

// Checkpoints that are all damaged are not "nothing to resume": training from the start would
// replace the run's model under its name. The refusal names each file and why.
TEST(TrainingSession, ResumeWhereEveryCheckpointIsDamagedIsAnErrorNamingEach) {
  TempDir dir;
  RunFolder first(dir.path());
  Model trained(1);
  train(first, trained, 4, {3, mlh::rt::Goal::Minimize, 2});
  const std::vector<std::string> files = mlh::rt::CheckpointManager(dir.str()).step_files();
  ASSERT_GE(files.size(), 2u);
  for (const std::string& f : files) std::ofstream(f, std::ios::trunc) << "not a checkpoint";

  RunFolder again(dir.path(), true);
  mlh::RunContext ctx(again.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan());
  Model fresh(99);
  TrainingState state = fresh.state();
  std::string message;
  EXPECT_EQ(code_of([&] { session.resume(state); }, &message), MLH_ERR_INVALID_ARGUMENT);
  for (const std::string& f : files) EXPECT_NE(message.find(f + ": "), std::string::npos) << f << "\n" << message;
  EXPECT_NE(message.find("nothing was trained"), std::string::npos) << message;
  EXPECT_FALSE(again.logged("training from the start"));
}

TEST(TrainingSession, ACheckpointThatDoesNotFitOrARestoreThatFailsIsAnError) {
  TempDir dir;
  RunFolder first(dir.path());
  Model trained(1);
  train(first, trained, 2, {});

  RunFolder again(dir.path(), true);
  mlh::RunContext ctx(again.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan());
  Model other_shape(1, /*out=*/4);
  TrainingState state = other_shape.state();
  std::string message;
  EXPECT_EQ(code_of([&] { session.resume(state); }, &message), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("model"), std::string::npos) << message;

  Model fits(5);
  TrainingState fitting = fits.state();
  EXPECT_EQ(code_of([&] {
              session.resume(fitting, [](const LoadedCheckpoint&) -> std::string {
                throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "checkpoint: 'sampler' is missing");
              });
            }, &message),
            MLH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(message, "checkpoint: 'sampler' is missing");
  EXPECT_FALSE(again.logged("resumed")) << "a failed restore is not reported as resumed";
}

TEST(TrainingSession, AStopRequestSavesOnceThenCancels) {
  TempDir dir;
  RunFolder run(dir.path());
  mlh::RunContext ctx(run.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan(), {3, mlh::rt::Goal::Minimize, 0, "iteration"});
  Model m(1);
  run.host.stop_at = 3;
  int saves = 0;
  std::string message;
  const mlh_status code = code_of([&] {
    while (m.step < 10) {
      m.train_step(session, 5);
      ctx.progress(m.step, 10, "iterations");
      session.after_step(m.step, [&] {
        ++saves;
        session.save(m.state(), m.step);
      });
    }
  }, &message);
  EXPECT_EQ(code, MLH_ERR_CANCELLED);
  EXPECT_EQ(message, "stopped at iteration 3 (checkpoint saved)");
  EXPECT_EQ(saves, 1);
  EXPECT_EQ(saved_steps(dir.path()), (std::vector<int64_t>{3}));

  // A stop at a step whose checkpoint is due saves it once, not twice.
  TempDir due;
  RunFolder due_run(due.path());
  mlh::RunContext due_ctx(due_run.c);
  TrainingSession due_session(due_ctx, mlh::rt::RuntimePlan(), {3, mlh::rt::Goal::Minimize, 2});
  due_run.host.stop_at = 0;  // asked from the start
  saves = 0;
  EXPECT_EQ(code_of([&] { due_session.after_step(2, [&] { ++saves; }); }, &message), MLH_ERR_CANCELLED);
  EXPECT_EQ(message, "stopped at step 2 (checkpoint saved)");
  EXPECT_EQ(saves, 1);
}

TEST(TrainingSession, AFailingSaveOnStopIsThatErrorNotACancel) {
  TempDir dir;
  std::ofstream(dir.str() + "/checkpoints") << "a file where the checkpoint folder goes";
  RunFolder run(dir.path());
  mlh::RunContext ctx(run.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan());
  Model m(1);
  m.train_step(session, 5);
  run.host.stop_at = 0;
  std::string message;
  EXPECT_EQ(code_of([&] { session.after_step(1, [&] { session.save(m.state(), 1); }); }, &message), MLH_ERR_IO);
  EXPECT_NE(message.find("checkpoints"), std::string::npos) << message;
}

TEST(TrainingSession, StopBetweenStepsAfterTheCallersOwnSave) {
  TempDir dir;
  RunFolder run(dir.path());
  mlh::RunContext ctx(run.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan());
  EXPECT_EQ(code_of([&] { session.stop_if_asked("after epoch 2", nullptr); }), MLH_OK) << "not asked: goes on";
  run.host.stop_at = 0;
  std::string message;
  EXPECT_EQ(code_of([&] { session.stop_if_asked("after epoch 2", nullptr); }, &message), MLH_ERR_CANCELLED);
  EXPECT_EQ(message, "stopped after epoch 2 (checkpoint saved)");
}

TEST(TrainingSession, MemoryIsRecordedAndTheCacheReleasedAsThePlanSays) {
  TempDir dir;
  RunFolder run(dir.path());
  mlh::RunContext ctx(run.c);
  mlh::rt::RuntimePlan plan;
  plan.empty_cache_steps = 2;
  SessionOptions options;
  double now = 0;
  int releases = 0;
  options.memory.interval_s = 1;
  options.memory.clock = [&] { return now; };
  options.memory.empty_cache = [&] { ++releases; };
  options.memory.empty_cache_steps = 100;  // the plan's wins
  TrainingSession session(ctx, plan, options);
  for (int64_t step = 1; step <= 4; ++step) {
    now += 1;
    session.after_step(step, [] {});
  }
  EXPECT_EQ(releases, 2);
  EXPECT_EQ(run.host.metrics["memory/rss_bytes"].size(), 4u);
  EXPECT_GT(run.host.metrics["memory/rss_bytes"].front(), 0);
}

TEST(TrainingSession, ExportsTheWeightsAndSendsTheSummaryWithItsFields) {
  TempDir dir;
  RunFolder run(dir.path());
  mlh::RunContext ctx(run.c);
  TrainingSession session(ctx, mlh::rt::RuntimePlan());
  Model m(1);
  m.train_step(session, 5);
  const std::string path = session.export_weights(*m.net, {{"model", "linear-3-2"}});
  EXPECT_EQ(path, dir.str() + "/model.safetensors");
  std::map<std::string, std::string> metadata;
  const auto weights = mlh::rt::load_safetensors(path, &metadata);
  EXPECT_TRUE(at::equal(weights.at("weight"), m.net->weight));
  EXPECT_TRUE(at::equal(weights.at("bias"), m.net->bias));
  EXPECT_EQ(metadata.at("model"), "linear-3-2");

  session.finish(*m.net, {{"final_loss", 0.25}, {"steps", 1}});
  const json summary = json::parse(run.host.summary);
  EXPECT_EQ(summary.at("final_loss"), 0.25);
  EXPECT_EQ(summary.at("steps"), 1);
  EXPECT_EQ(summary.at("world_size"), 1);
  EXPECT_EQ(summary.at("ranks_agree"), true);

  session.finish(*m.net, nullptr);
  json bare = json::parse(run.host.summary);
  bare.erase("plan_applied");  // the runtime's report, once any test in this process applied a plan
  EXPECT_EQ(bare, (json{{"world_size", 1}, {"ranks_agree", true}}));
  EXPECT_EQ(code_of([&] { session.finish(*m.net, json::array({1, 2})); }), MLH_ERR_INTERNAL);
}

// --max-steps (the plan's max_steps): a loop sized by step_limit stops there; after_step says
// so from that step on, for loops it cannot size; the summary and the log say so; without it
// nothing changes.
TEST(TrainingSession, MaxStepsShortensTheLoopAndEndsItAsANormalEnd) {
  TempDir dir;
  RunFolder run(dir.path());
  run.c.plan_json = R"({"torch_device": "cpu", "max_steps": 3})";
  mlh::RunContext ctx(run.c);
  const auto plan = mlh::rt::RuntimePlan::parse(run.c.plan_json);
  ASSERT_EQ(plan.max_steps, 3);
  TrainingSession session(ctx, plan, {/*keep_checkpoints=*/3, mlh::rt::Goal::Minimize, /*checkpoint_every=*/2});
  EXPECT_EQ(session.step_limit(10), 3);
  EXPECT_EQ(session.step_limit(2), 2) << "a shorter run is not lengthened";
  Model m(1);
  const int64_t steps = session.step_limit(10);
  std::vector<bool> ends;
  while (m.step < steps) {
    const double loss = m.train_step(session, 100 + static_cast<uint64_t>(m.step));
    ends.push_back(session.after_step(m.step, [&] { session.save(m.state(), m.step, loss); }, m.step == steps));
  }
  EXPECT_EQ(ends, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(saved_steps(dir.str()), (std::vector<int64_t>{2, 3})) << "every 2 steps, and the last once";
  EXPECT_TRUE(run.logged("--max-steps 3: training ends at step 3"));
  EXPECT_TRUE(session.after_step(4, [] {})) << "past the limit too";
  session.finish(*m.net, {{"steps", m.step}});
  EXPECT_EQ(json::parse(run.host.summary).at("max_steps"), 3);

  // Without it: the loop's own length, and after_step never ends it.
  TempDir plain_dir;
  RunFolder plain(plain_dir.path());
  mlh::RunContext plain_ctx(plain.c);
  TrainingSession unlimited(plain_ctx, mlh::rt::RuntimePlan::parse(plain.c.plan_json));
  EXPECT_EQ(unlimited.step_limit(10), 10);
  EXPECT_FALSE(unlimited.after_step(1000, [] {}));
  unlimited.finish(*m.net, nullptr);
  EXPECT_FALSE(json::parse(plain.host.summary).contains("max_steps"));
}

TEST(TrainingSession, BadOptionsAreRefusedBeforeJoiningAGroup) {
  // A rank 0 of two whose peer never comes would wait for it: the options fail first.
  ::setenv("MASTER_PORT", std::to_string(free_loopback_port_for_test()).c_str(), 1);
  ::setenv("MLH_DIST_TIMEOUT_S", "60", 1);
  TempDir dir;
  RunFolder run(dir.path(), false, /*rank=*/0, /*world_size=*/2);
  mlh::RunContext ctx(run.c);
  std::string message;
  EXPECT_EQ(code_of([&] { TrainingSession s(ctx, mlh::rt::RuntimePlan(), {0}); }, &message), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("keep_checkpoints"), std::string::npos) << message;
  EXPECT_EQ(code_of([&] { TrainingSession s(ctx, mlh::rt::RuntimePlan(), {3, mlh::rt::Goal::Minimize, -1}); }, &message),
            MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("checkpoint_every"), std::string::npos) << message;
  ::unsetenv("MASTER_PORT");
  ::unsetenv("MLH_DIST_TIMEOUT_S");
}

// ---- two ranks in one process: a thread each, joined through a TCPStore on loopback ----

// Runs body(rank, run) on two ranks at once, each with its own host and run folder
// run_dirs[rank]; rethrows a failure other than the mlh::Errors the body returns in codes.
void two_ranks(const std::vector<std::string>& run_dirs, bool resume,
               const std::function<void(int rank, RunFolder& run)>& body) {
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(free_loopback_port_for_test()).c_str(), 1);
  ::setenv("MLH_DIST_TIMEOUT_S", "60", 1);
  std::exception_ptr failure[2];
  std::thread threads[2];
  for (int rank = 0; rank < 2; ++rank)
    threads[rank] = std::thread([&, rank] {
      try {
        RunFolder run(run_dirs[static_cast<size_t>(rank)], resume, rank, 2);
        body(rank, run);
      } catch (...) {
        failure[rank] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  ::unsetenv("MASTER_PORT");
  ::unsetenv("MLH_DIST_TIMEOUT_S");
  for (auto& f : failure)
    if (f) std::rethrow_exception(f);
}

TEST(TrainingSessionDistributed, RankZeroAloneWritesAndEveryRankReportsTheGroup) {
  TempDir dir0, dir1;  // a folder per rank, to see who writes
  json summaries[2];
  two_ranks({dir0.path(), dir1.path()}, false, [&](int rank, RunFolder& run) {
    mlh::RunContext ctx(run.c);
    TrainingSession session(ctx, mlh::rt::RuntimePlan(), {3, mlh::rt::Goal::Minimize, 2});
    EXPECT_EQ(session.dist().world_size(), 2);
    Model m(10 + static_cast<uint64_t>(rank));  // different initial weights, then rank 0's
    session.dist().broadcast_module(*m.net);
    while (m.step < 4) {
      const double loss = m.train_step(session, 100 * static_cast<uint64_t>(rank) + static_cast<uint64_t>(m.step));
      session.after_step(m.step, [&] { session.save(m.state(), m.step, loss); });
    }
    EXPECT_EQ(session.export_weights(*m.net), run.dir + "/model.safetensors");
    session.finish(*m.net, {{"rank", rank}});
    summaries[rank] = json::parse(run.host.summary);
  });
  EXPECT_EQ(saved_steps(dir0.path()), (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(fs::exists(dir0.str() + "/model.safetensors"));
  EXPECT_TRUE(saved_steps(dir1.path()).empty()) << "rank 1 wrote checkpoints";
  EXPECT_FALSE(fs::exists(dir1.str() + "/model.safetensors")) << "rank 1 exported";
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(summaries[rank].at("world_size"), 2);
    EXPECT_EQ(summaries[rank].at("ranks_agree"), true) << summaries[rank].dump();
    EXPECT_EQ(summaries[rank].at("rank"), rank);
  }
}

TEST(TrainingSessionDistributed, AStopAskedOfOneRankStopsBothAtTheSameStepAndBothResume) {
  TempDir dir;
  std::string messages[2];
  mlh_status codes[2] = {MLH_OK, MLH_OK};
  at::Tensor stopped_weights;
  two_ranks({dir.path(), dir.path()}, false, [&](int rank, RunFolder& run) {
    mlh::RunContext ctx(run.c);
    TrainingSession session(ctx, mlh::rt::RuntimePlan(), {3, mlh::rt::Goal::Minimize, 2});
    Model m(10 + static_cast<uint64_t>(rank));
    session.dist().broadcast_module(*m.net);
    if (rank == 1) run.host.stop_at = 3;  // Ctrl-C reaches rank 1 first
    codes[rank] = code_of([&] {
      while (m.step < 10) {
        m.train_step(session, 100 * static_cast<uint64_t>(rank) + static_cast<uint64_t>(m.step));
        ctx.progress(m.step, 10, "steps");
        session.after_step(m.step, [&] { session.save(m.state(), m.step); });
      }
    }, &messages[rank]);
    if (rank == 0) stopped_weights = m.net->weight.detach().clone();
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(codes[rank], MLH_ERR_CANCELLED) << "rank " << rank;
    EXPECT_EQ(messages[rank], "stopped at step 3 (checkpoint saved)") << "rank " << rank;
  }
  EXPECT_EQ(saved_steps(dir.path()), (std::vector<int64_t>{2, 3}));

  bool resumed[2] = {false, false};
  at::Tensor loaded[2];
  two_ranks({dir.path(), dir.path()}, /*resume=*/true, [&](int rank, RunFolder& run) {
    mlh::RunContext ctx(run.c);
    TrainingSession session(ctx, mlh::rt::RuntimePlan(), {3, mlh::rt::Goal::Minimize, 2});
    Model m(50 + static_cast<uint64_t>(rank));
    TrainingState state = m.state();
    session.resume(state, [&](const LoadedCheckpoint& c) {
      m.step = c.values.at("step");
      return "at step " + std::to_string(m.step);
    });
    resumed[rank] = run.logged("resumed at step 3 (");
    loaded[rank] = m.net->weight.detach().clone();
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(resumed[rank]) << "rank " << rank;
    EXPECT_TRUE(at::equal(loaded[rank], stopped_weights)) << "rank " << rank;
  }
}

TEST(TrainingSessionDistributed, RanksAgreeIsFalseWhenARankDrifted) {
  TempDir dir;
  json summaries[2];
  two_ranks({dir.path(), dir.path()}, false, [&](int rank, RunFolder& run) {
    mlh::RunContext ctx(run.c);
    TrainingSession session(ctx, mlh::rt::RuntimePlan());
    Model m(10);
    session.dist().broadcast_module(*m.net);
    if (rank == 1) {
      torch::NoGradGuard no_grad;
      m.net->bias.add_(1e-3);  // an update rank 0 did not make
    }
    session.finish(*m.net, json::object());
    summaries[rank] = json::parse(run.host.summary);
  });
  EXPECT_EQ(summaries[0].at("ranks_agree"), false);
  EXPECT_EQ(summaries[1].at("ranks_agree"), false);
}

}  // namespace
