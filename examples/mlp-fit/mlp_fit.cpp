// mlp-fit: a small MLP learns y = 3x + 1; the smallest algorithm plugin with checkpoints,
// resume and data-parallel training. The TrainingSession does the run's lifecycle (the ranks'
// group, checkpoints and --resume, stopping on Ctrl-C, memory, weight export, the summary's
// world_size and ranks_agree); this file is the model, the data and the loop.
#include <string>
#include <utility>
#include <mlh/command_table.hpp>
#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/seed.hpp>
#include <mlh/runtime/training_session.hpp>
#include <nlohmann/json.hpp>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

namespace {

using nlohmann::json;

const char* kSchema = R"({"type": "object", "additionalProperties": false, "properties": {
  "steps": {"type": "integer", "minimum": 1}, "batch_size": {"type": "integer", "minimum": 1}, "seed": {"type": "integer"},
  "lr": {"type": "number", "exclusiveMinimum": 0}, "checkpoint_every": {"type": "integer", "minimum": 1}}})";
const char* kDefaults = R"({"steps": 1000, "batch_size": 64, "lr": 0.01, "checkpoint_every": 100, "seed": 0})";

// A batch of y = 3x + 1 on [-1, 1], drawn from (seed, rank, step) alone: every rank its own
// data, and a resumed run draws the batches an uninterrupted one would.
std::pair<at::Tensor, at::Tensor> batch_at(int64_t step, int64_t size, uint64_t seed, const mlh::rt::Distributed& dist) {
  mlh::rt::seed_everything(dist.seed_for_rank(seed + static_cast<uint64_t>(step)));
  const at::Tensor x = at::rand({size, 1}) * 2 - 1;
  return {x, 3 * x + 1};
}

void train(mlh::RunContext& ctx) {
  const json cfg = json::parse(ctx.config_json());
  const auto plan = mlh::rt::RuntimePlan::parse(ctx.plan_json());
  mlh::rt::apply_plan(plan);
  const int64_t batch = cfg.at("batch_size");
  const uint64_t seed = cfg.at("seed");
  mlh::rt::TrainingSession session(ctx, plan, {/*keep_checkpoints=*/3, mlh::rt::Goal::Minimize,
                                               /*checkpoint_every=*/cfg.at("checkpoint_every").get<int64_t>()});
  const int64_t steps = session.step_limit(cfg.at("steps"));  // fewer under --max-steps
  mlh::rt::seed_everything(seed);
  torch::nn::Sequential net(torch::nn::Linear(1, 16), torch::nn::Tanh(), torch::nn::Linear(16, 1));
  net->to(plan.device);
  session.init_weights(*net);             // --init-from: weights trained elsewhere
  session.dist().broadcast_module(*net);  // every rank starts from rank 0's weights
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(cfg.at("lr").get<double>()));
  int64_t step = 0;
  double loss = 0;
  auto state = [&] {  // what a checkpoint holds
    mlh::rt::TrainingState s;
    s.add("model", *net).add("optimizer", optimizer);
    s.values = {{"step", step}, {"loss", loss}};
    return s;
  };
  mlh::rt::TrainingState saved = state();
  session.resume(saved, [&](const mlh::rt::LoadedCheckpoint& checkpoint) {
    step = checkpoint.values.at("step");
    loss = checkpoint.values.at("loss");
    return "at step " + std::to_string(step);
  });
  while (step < steps) {
    const auto [x, y] = batch_at(step, batch, seed, session.dist());
    optimizer.zero_grad();
    const at::Tensor l = (net->forward(x.to(plan.device)) - y.to(plan.device)).pow(2).mean();
    l.backward();
    session.dist().average_gradients(net->parameters());  // the ranks take the same step
    optimizer.step();
    loss = session.dist().mean(l.item<double>());
    ++step;
    ctx.metric("train/loss", loss, step);
    ctx.progress(step, steps, "steps");
    session.after_step(step, [&] { session.save(state(), step, loss); }, /*save_now=*/step == steps);
  }
  // The fit, read off the model: its slope and intercept on [-1, 1].
  torch::NoGradGuard no_grad;
  const at::Tensor f = net->forward(at::tensor({-1.0f, 0.0f, 1.0f}).view({3, 1}).to(plan.device)).to(at::kCPU);
  const double slope = (f[2].item<double>() - f[0].item<double>()) / 2, intercept = f[1].item<double>();
  session.export_weights(*net);
  session.finish(*net, {{"final_loss", loss}, {"slope", slope}, {"intercept", intercept}, {"steps", step}});
}

const mlh::CommandTable<mlh::RunContext&>& commands() {
  static const mlh::CommandTable<mlh::RunContext&> table{{"train", train}};
  return table;
}

class MlpFit : public mlh::AlgorithmPlugin {
 public:
  mlh::AlgorithmDescription describe() override {  // summary, commands (the first is the default), config
    return {"a small MLP (1-16-1, tanh) fits y = 3x + 1", commands().names(), kSchema, kDefaults};
  }
  void run(mlh::RunContext& ctx) override { commands().run(ctx.command(), ctx); }
};

}  // namespace

MLH_ALGORITHM_PLUGIN(MlpFit)
