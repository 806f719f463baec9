// toyreg: fits y = 3x - 2 (plus noise) by gradient descent on a LibTorch tensor model.
// Its knobs fail_at_step and crash_at_step let the tests exercise the host's handling of
// a failing and a crashing worker.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>
#include <fstream>

#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

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
    "label": {"type": "string"}
  }
})";

const char* kDefaults = R"({"steps": 200, "lr": 0.1, "samples": 256, "batch_size": 64, "seed": 0, "checkpoint_every": 50,
  "step_delay_ms": 0, "fail_at_step": -1, "crash_at_step": -1, "label": "toy"})";

class ToyRegression : public mlh::AlgorithmPlugin {
 public:
  mlh::AlgorithmDescription describe() override {
    mlh::AlgorithmDescription d;
    d.summary = "fits y = 3x - 2 with gradient descent";
    d.commands = {"train", "eval"};
    d.config_schema_json = kSchema;
    d.config_defaults_json = kDefaults;
    // The model is w and b whatever the preset; "$parameters" is what the host prints.
    d.presets_json = R"({"full": {"samples": 1024, "$parameters": 2}, "reduced": {"samples": 256, "$parameters": 2},
                         "quick": {"steps": 20}})";
    return d;
  }

  void run(mlh::RunContext& ctx) override {
    const json cfg = json::parse(ctx.config_json());
    const std::string state_path = ctx.run_dir() + "/toyreg_state.json";
    if (ctx.command() == "eval") return evaluate(ctx, state_path);

    const int64_t steps = cfg.at("steps"), every = cfg.at("checkpoint_every");
    const double lr = cfg.at("lr");
    const int64_t batch = cfg.at("batch_size");
    at::manual_seed(cfg.at("seed").get<int64_t>());
    const at::Tensor x = at::rand({cfg.at("samples").get<int64_t>(), 1}) * 2 - 1;
    const at::Tensor y = x * 3 - 2 + at::randn_like(x) * 0.01;

    double w = 0, b = 0;
    int64_t start = 0;
    if (ctx.resume()) {
      std::ifstream in(state_path);
      if (in) {
        json s = json::parse(in);
        w = s.at("w"), b = s.at("b"), start = s.at("step");
        ctx.info("resumed from step " + std::to_string(start));
      }
    }
    ctx.info("torch intra-op threads: " + std::to_string(at::get_num_threads()));
    ctx.metric("toy/torch_threads", at::get_num_threads(), start);

    double loss = 0;
    for (int64_t step = start; step < steps; ++step) {
      if (step == cfg.at("fail_at_step").get<int64_t>())
        throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "failing on purpose at step " + std::to_string(step));
      if (step == cfg.at("crash_at_step").get<int64_t>()) std::raise(SIGSEGV);
      // A random minibatch of batch_size samples (the host's plan sets batch_size).
      const at::Tensor pick = at::randperm(x.size(0)).narrow(0, 0, std::min<int64_t>(batch, x.size(0)));
      const at::Tensor xb = x.index_select(0, pick), yb = y.index_select(0, pick);
      const at::Tensor err = xb * w + b - yb;
      loss = err.pow(2).mean().item<double>();
      w -= lr * (2 * (err * xb).mean().item<double>());
      b -= lr * (2 * err.mean().item<double>());
      ctx.metric("train/loss", loss, step);
      ctx.progress(step + 1, steps, "steps");
      if ((step + 1) % every == 0 || step + 1 == steps) save(state_path, w, b, step + 1);
      if (int64_t d = cfg.at("step_delay_ms"); d > 0) std::this_thread::sleep_for(std::chrono::milliseconds(d));
      if (ctx.should_stop()) {
        save(state_path, w, b, step + 1);
        throw mlh::Error(MLH_ERR_CANCELLED, "stopped at step " + std::to_string(step + 1) + " (state saved)");
      }
    }
    ctx.info("final loss " + std::to_string(loss) + ", w " + std::to_string(w) + ", b " + std::to_string(b));
    ctx.summary(json{{"final_loss", loss}, {"w", w}, {"b", b}, {"steps", steps},
                     {"torch_threads", at::get_num_threads()}, {"label", cfg.at("label")},
                     {"batch_size", batch}, {"samples", cfg.at("samples")}}
                    .dump());
  }

 private:
  static void save(const std::string& path, double w, double b, int64_t step) {
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp) << json{{"w", w}, {"b", b}, {"step", step}}.dump();
    std::rename(tmp.c_str(), path.c_str());
  }

  static void evaluate(mlh::RunContext& ctx, const std::string& state_path) {
    std::ifstream in(state_path);
    if (!in) throw mlh::Error(MLH_ERR_IO, "no trained model in the run folder ('" + state_path + "')");
    const json s = json::parse(in);
    const double w = s.at("w"), b = s.at("b");
    const double error = std::abs(w - 3) + std::abs(b + 2);
    ctx.metric("eval/parameter_error", error, s.at("step"));
    ctx.summary(json{{"parameter_error", error}}.dump());
  }
};

}  // namespace

MLH_ALGORITHM_PLUGIN(ToyRegression)
