// toyreg: fits y = 3x - 2 (plus noise) with a one-weight linear model, on the training
// runtime: the plan applied, precision, checkpoints (resume, best, cancel), throughput,
// safetensors export and a benchmark command. It is small enough to train in a second, so
// the tests drive the whole run path through it. Its knobs fail_at_step and crash_at_step
// let the tests exercise the host's handling of a failing and a crashing worker.
//
// Distributed, it is data-parallel on the runtime: every rank draws the same permutation and
// takes its slice of batch_size x world_size samples, so N ranks at batch B train exactly as
// one process at batch N x B (the tests compare the two).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>

#include <mlh/command_table.hpp>
#include <mlh/plugin.hpp>
#include <mlh/run_description.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/batch_finder.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/calibration.hpp>
#include <mlh/runtime/grad_scaler.hpp>
#include <mlh/runtime/oom_backoff.hpp>
#include <mlh/runtime/precision.hpp>
#include <mlh/runtime/seed.hpp>
#include <mlh/runtime/throughput.hpp>
#include <mlh/runtime/training_session.hpp>
#include <mlh/runtime/trained_run.hpp>
#include <nlohmann/json.hpp>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

namespace {

using nlohmann::json;

const char* kSchema = R"({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "steps": {"type": "integer", "minimum": 1, "description": "gradient steps"},
    "lr": {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
    "samples": {"type": "integer", "minimum": 2},
    "batch_size": {"type": "integer", "minimum": 1, "description": "samples per gradient step"},
    "seed": {"type": "integer"},
    "checkpoint_every": {"type": "integer", "minimum": 1},
    "step_delay_ms": {"type": "integer", "minimum": 0},
    "fail_at_step": {"type": "integer"},
    "crash_at_step": {"type": "integer"},
    "hang_at_step": {"type": "integer", "description": "sleep forever at this step, outside any collective"},
    "hang_rank": {"type": "integer", "description": "the rank hang_at_step applies to; -1: every rank"},
    "fault_rank": {"type": "integer", "description": "the rank fail_at_step and crash_at_step apply to; -1: every rank"},
    "fault_once": {"type": "boolean", "description": "fail_at_step and crash_at_step only in a run that did not resume: a restart runs clean"},
    "label": {"type": "string"},
    "row_bytes": {"type": "integer", "minimum": 0, "description": "extra activation memory per row in a step, for memory tests"},
    "micro_batch": {"type": "integer", "minimum": 0, "description": "rows per micro-batch from the start; 0: the whole batch"}
  }
})";

const char* kDefaults = R"({"steps": 200, "lr": 0.1, "samples": 256, "batch_size": 64, "seed": 0,
  "checkpoint_every": 50, "step_delay_ms": 0, "fail_at_step": -1, "crash_at_step": -1, "fault_rank": -1,
  "fault_once": false, "hang_at_step": -1, "hang_rank": -1,
  "label": "toy", "row_bytes": 0, "micro_batch": 0})";

// The model, its optimizer and its data: everything a step and a checkpoint need.
struct Trainer {
  Trainer(const mlh::RunContext& ctx, const json& cfg, const mlh::rt::RuntimePlan& plan, mlh::rt::Distributed& d)
      : dist(d),
        model(torch::nn::LinearOptions(1, 1)),
        optimizer(model->parameters(), torch::optim::SGDOptions(cfg.at("lr").get<double>())),
        scaler(65536.0, 2.0, 0.5, 2000, plan.precision == mlh::rt::Precision::kFp16),
        precision(plan.precision),
        device(plan.device),
        batch(cfg.at("batch_size").get<int64_t>()),
        row_bytes(cfg.at("row_bytes").get<int64_t>()),
        micro(ctx, cfg.at("micro_batch").get<int64_t>()) {
    model->to(device);
    dist.broadcast_module(*model);
    if (batch * dist.world_size() > cfg.at("samples").get<int64_t>())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "batch_size x ranks (" + std::to_string(batch * dist.world_size()) +
                                                     ") exceeds samples (" + cfg.at("samples").dump() + ")");
    x = (at::rand({cfg.at("samples").get<int64_t>(), 1}) * 2 - 1).to(device);
    y = x * 3 - 2 + at::randn_like(x) * 0.01;
  }

  // One SGD step on a random minibatch, in micro-batches that back off when memory runs out
  // (oom_backoff.hpp); returns its loss.
  double step() {
    // The same permutation on every rank (same seed); each takes its own slice of it.
    const at::Tensor pick = at::randperm(x.size(0)).narrow(0, dist.rank() * batch, std::min<int64_t>(batch, x.size(0))).to(device);
    const at::Tensor xb = x.index_select(0, pick), yb = y.index_select(0, pick);
    double loss = 0;
    micro.run(xb.size(0), {[&] { optimizer.zero_grad(); },
                           [&](int64_t begin, int64_t count, double weight) {
                             const at::Tensor xm = xb.narrow(0, begin, count), ym = yb.narrow(0, begin, count);
                             at::Tensor part;
                             {
                               mlh::rt::AutocastScope autocast(precision, device);
                               at::Tensor pred = model->forward(xm).to(at::kFloat);
                               // Stand-in activations of a bigger model: allocated (and counted by
                               // the memory cap) but barely touched, so larger batches stay cheap.
                               if (row_bytes > 0)
                                 pred = pred + at::empty({count, row_bytes / 4}, xm.options()).narrow(1, 0, 1).zero_();
                               part = (pred - ym).pow(2).mean() * weight;
                             }
                             scaler.scale(part).backward();
                             loss += part.item<double>();
                           },
                           [&] {
                             dist.average_gradients(model->parameters());
                             scaler.step(optimizer);
                             scaler.update();
                           }},
              device);
    return loss;
  }

  // The checkpoint's layout, unchanged since checkpoints were first written (resumable).
  mlh::rt::TrainingState state(int64_t step) {
    mlh::rt::TrainingState s;
    s.add("model", *model).add("optimizer", optimizer);
    s.tensors = mlh::rt::capture_rng_state().to_tensors();
    s.values = {{"step", step}, {"scaler", scaler.state()}, {"micro_batch", micro.state()}};
    return s;
  }

  double weight() { return model->weight.item<double>(); }
  double bias() { return model->bias.item<double>(); }

  mlh::rt::Distributed& dist;
  torch::nn::Linear model;
  torch::optim::SGD optimizer;
  mlh::rt::GradScaler scaler;
  mlh::rt::Precision precision;
  at::Device device;
  int64_t batch;
  int64_t row_bytes;
  mlh::rt::MicroBatchedStep micro;
  at::Tensor x, y;
};

// The faults the tests ask for at `step`: an error, a crash, a hang (fault_rank and hang_rank
// pick the rank; -1 every rank). `resumed`: this run continues from a checkpoint.
void inject_faults(const json& cfg, int rank, int64_t step, bool resumed) {
  const int64_t fault_rank = cfg.at("fault_rank");
  const bool faulty = (fault_rank < 0 || fault_rank == rank) && !(resumed && cfg.at("fault_once").get<bool>());
  if (faulty && step == cfg.at("fail_at_step").get<int64_t>())
    throw mlh::Error(MLH_ERR_INTERNAL, "failing on purpose at step " + std::to_string(step));
  if (faulty && step == cfg.at("crash_at_step").get<int64_t>()) std::raise(SIGSEGV);
  const int64_t hang_rank = cfg.at("hang_rank");
  if ((hang_rank < 0 || hang_rank == rank) && step == cfg.at("hang_at_step").get<int64_t>())
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

void train(mlh::RunContext& ctx, const json& cfg, const mlh::rt::RuntimePlan& plan) {
  mlh::rt::TrainingSession session(ctx, plan, {3, mlh::rt::Goal::Minimize, cfg.at("checkpoint_every").get<int64_t>()});
  const int64_t steps = session.step_limit(cfg.at("steps"));
  Trainer t(ctx, cfg, plan, session.dist());
  session.init_weights(*t.model);  // --init-from
  int64_t start = 0;
  double loss = 0;
  mlh::rt::TrainingState saved = t.state(0);
  session.resume(saved, [&](const mlh::rt::LoadedCheckpoint& checkpoint) {
    start = checkpoint.values.at("step");
    if (checkpoint.metric) loss = *checkpoint.metric;  // a run resumed at its end still reports its loss
    t.scaler.load_state(checkpoint.values.at("scaler"));
    if (checkpoint.values.contains("micro_batch")) t.micro.load_state(checkpoint.values.at("micro_batch"));
    mlh::rt::restore_rng_state(mlh::rt::RngState::from_tensors(saved.tensors));
    return "from step " + std::to_string(start);
  });
  ctx.info("torch intra-op threads: " + std::to_string(at::get_num_threads()) + ", precision " +
           mlh::rt::to_string(t.precision));
  ctx.metric("toy/torch_threads", at::get_num_threads(), start);
  mlh::rt::ThroughputMeter speed(ctx);

  for (int64_t step = start; step < steps; ++step) {
    inject_faults(cfg, t.dist.rank(), step, ctx.resume());
    loss = t.step();
    speed.record_step(t.batch, step);
    ctx.metric("train/loss", loss, step);
    ctx.progress(step + 1, steps, "steps");
    if (int64_t d = cfg.at("step_delay_ms"); d > 0) std::this_thread::sleep_for(std::chrono::milliseconds(d));
    session.after_step(step + 1, [&] { session.save(t.state(step + 1), step + 1, loss); }, /*save_now=*/step + 1 == steps);
  }
  speed.flush();
  session.export_weights(*t.model);
  ctx.info("final loss " + std::to_string(loss) + ", w " + std::to_string(t.weight()) + ", b " +
           std::to_string(t.bias()));
  session.finish(*t.model, {{"final_loss", loss}, {"w", t.weight()}, {"b", t.bias()}, {"steps", steps},
                            {"torch_threads", at::get_num_threads()}, {"label", cfg.at("label")},
                            {"batch_size", t.batch}, {"samples", cfg.at("samples")}, {"rank", t.dist.rank()},
                            {"backend", t.dist.backend()}, {"store", t.dist.store()}, {"oom_backoffs", t.micro.backoffs()},
                            {"micro_batch", t.micro.micro_batch(t.batch)},
                            {"lr", t.optimizer.param_groups()[0].options().get_lr()}, {"scaler", t.scaler.state()}});
}

void evaluate(mlh::RunContext& ctx, const json& cfg, const mlh::rt::RuntimePlan& plan) {
  mlh::rt::Distributed dist(ctx, plan.device);
  Trainer t(ctx, cfg, plan, dist);
  mlh::rt::TrainingState s = t.state(0);
  const mlh::rt::LoadedCheckpoint loaded = mlh::rt::load_trained(ctx, s, t.device);
  const double error = std::abs(t.weight() - 3) + std::abs(t.bias() + 2);
  ctx.metric("eval/parameter_error", error, loaded.step);
  ctx.summary(json{{"parameter_error", error}, {"checkpoint", loaded.path}}.dump());
}

// The step's speed, and a precision check that trains 30 steps from the same start in fp32
// and in the asked precision (the host's calibration).
void calibrate(mlh::RunContext& ctx, const json& cfg, const mlh::rt::RuntimePlan& plan) {
  mlh::rt::Distributed dist(ctx, plan.device);
  const auto request = mlh::rt::CalibrationRequest::parse(ctx.plan_json());
  if (request.batch_search) {
    // No trainer at the plan's batch first: that batch is only where the search starts, and it
    // may not fit the data (the cuda rule's 2048 over 256 samples) or the memory.
    // Each trial a fresh trainer at that batch: three steps, the last two timed.
    mlh::rt::BatchSearchOptions options = mlh::rt::BatchSearchOptions::from_plan(ctx.plan_json());
    options.max = std::min(options.max, cfg.at("samples").get<int64_t>() / dist.world_size());
    options.memory_limit_bytes = mlh::rt::planned_memory_limit(plan);
    const auto result = mlh::rt::find_batch_size(
        [&](int64_t batch) {
          json c = cfg;
          c["batch_size"] = batch;
          Trainer trial(ctx, c, plan, dist);
          trial.micro.set_backoff(false);
          trial.step();
          const auto t0 = std::chrono::steady_clock::now();
          trial.step();
          trial.step();
          return 2.0 * static_cast<double>(batch) /
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        },
        plan.device, options);
    ctx.summary(json{{"batch_search", result.to_json()}}.dump());
    return;
  }
  Trainer t(ctx, cfg, plan, dist);
  json reply = {{"calibration", mlh::rt::time_calibration_step("train_step", [&] { t.step(); },
                                                               static_cast<double>(t.batch), "samples", plan.device,
                                                               request)}};
  if (request.check_precision) {
    auto loss_after = [&](mlh::rt::Precision precision) {
      mlh::rt::RuntimePlan p = plan;
      p.precision = precision;
      mlh::rt::seed_everything(cfg.at("seed").get<uint64_t>());
      Trainer fresh(ctx, cfg, p, dist);
      double loss = 0;
      for (int i = 0; i < 30; ++i) loss = fresh.step();
      return loss;
    };
    const double fp32 = loss_after(mlh::rt::Precision::kFp32);
    reply["precision_check"] = mlh::rt::precision_check(*request.check_precision, fp32,
                                                        loss_after(*request.check_precision), 0.05, 30);
  }
  ctx.summary(reply.dump());
}

void benchmark(mlh::RunContext& ctx, const json& cfg, const mlh::rt::RuntimePlan& plan) {
  mlh::rt::Distributed dist(ctx, plan.device);
  Trainer t(ctx, cfg, plan, dist);
  mlh::rt::BenchmarkOptions options;
  options.items_per_iteration = static_cast<double>(t.batch);
  options.unit = "samples";
  options.device = plan.device;
  options.min_seconds = 0.5;
  const mlh::rt::BenchmarkResult r = mlh::rt::run_benchmark("train_step", [&] { t.step(); }, options);
  ctx.info("train_step: median " + std::to_string(r.median_ms) + " ms");
  ctx.summary(mlh::rt::benchmarks_summary({r}).dump());
}

const mlh::CommandTable<mlh::RunContext&, const json&, const mlh::rt::RuntimePlan&>& commands() {
  static const mlh::CommandTable<mlh::RunContext&, const json&, const mlh::rt::RuntimePlan&> table{
      {"train", train}, {"eval", evaluate}, {"benchmark", benchmark}, {"calibrate", calibrate}};
  return table;
}

class ToyRegression : public mlh::AlgorithmPlugin {
 public:
  mlh::AlgorithmDescription describe() override {
    mlh::AlgorithmDescription d;
    d.summary = "fits y = 3x - 2 with gradient descent";
    d.commands = commands().names();
    d.config_schema_json = kSchema;
    d.config_defaults_json = kDefaults;
    // The model is w and b whatever the preset; "$parameters" is what the host prints.
    d.presets_json = R"({"full": {"samples": 1024, "$parameters": 2}, "reduced": {"samples": 256, "$parameters": 2},
                         "quick": {"steps": 20}})";
    return d;
  }

  // The plan fields toyreg reads: a runtime user's minimal declaration (docs/plugin-guide.md).
  std::string describe_run(const mlh::RunContext& ctx) override {
    const bool trains = ctx.command() != "eval";
    mlh::RunDescription d;
    d.model(2, "y = w x + b");
    d.uses_if(trains, "batch_size", "samples per gradient step", "eval trains nothing");
    d.uses("precision", "autocast for the forward pass (fp16 with a gradient scaler)");
    d.uses("preset", "the number of samples");
    d.uses_if(ctx.command() == "train", "max_steps", "trains that many steps of the config's", ctx.command() + " does not train");
    d.uses_if(ctx.command() == "train", "init_from", "the linear model's first weights", ctx.command() + " does not train");
    if (ctx.command() == "train") {  // samples, as calibrate counts them
      const json cfg = json::parse(ctx.config_json());
      const mlh::rt::RuntimePlan plan = mlh::rt::RuntimePlan::parse(ctx.plan_json());
      const int64_t steps = std::min(cfg.at("steps").get<int64_t>(), plan.max_steps.value_or(cfg.at("steps").get<int64_t>()));
      d.work(static_cast<double>(steps * plan.batch_size.value_or(cfg.at("batch_size").get<int64_t>())), "samples", "steps");
    }
    d.uses_if(ctx.command() == "train", "empty_cache_steps", "releases the device's cached memory every N steps",
              ctx.command() + " does not release the cache");
    d.no_effect("gradient_checkpointing", "a linear model has no activations to recompute");
    d.no_effect("pinned_memory", "toyreg makes its data on the device: nothing is copied from the host");
    d.no_effect("dataloader_workers", "toyreg makes its data once, up front");
    d.no_effect("prefetch_factor", "toyreg makes its data once, up front");
    d.no_effect("channels_last", "toyreg has no convolutions");
    d.no_effect("cudnn_benchmark", "toyreg has no convolutions");
    d.no_effect("cuda_graphs", "toyreg's step is not captured");
    return d.json();
  }

  void run(mlh::RunContext& ctx) override {
    const json cfg = json::parse(ctx.config_json());
    const mlh::rt::RuntimePlan plan = mlh::rt::RuntimePlan::parse(ctx.plan_json());
    mlh::rt::apply_plan(plan);
    mlh::rt::seed_everything(cfg.at("seed").get<uint64_t>());
    commands().run(ctx.command(), ctx, cfg, plan);
  }
};

}  // namespace

MLH_ALGORITHM_PLUGIN(ToyRegression)
