#include "mlh/runtime/training_session.hpp"

#include <algorithm>
#include <utility>

#include <mlh/plugin.hpp>

#include "mlh/runtime/safetensors.hpp"
#include "mlh/runtime/throughput.hpp"
#include "mlh/runtime/warm_start.hpp"

namespace mlh::rt {

namespace {

// Checked before the group is joined: every rank has the same options, so every rank fails
// here alike instead of leaving the others waiting in a collective.
SessionOptions checked(SessionOptions options) {
  if (options.keep_checkpoints < 1)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "training session: keep_checkpoints must be at least 1, got " +
                                                   std::to_string(options.keep_checkpoints));
  if (options.checkpoint_every < 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "training session: checkpoint_every must not be negative, got " +
                                                   std::to_string(options.checkpoint_every));
  if (options.step_name.empty()) options.step_name = "step";
  return options;
}

MemoryMonitorOptions memory_options(MemoryMonitorOptions options, const RuntimePlan& plan) {
  options.empty_cache_steps = plan.empty_cache_steps;
  return options;
}

}  // namespace

TrainingSession::TrainingSession(const mlh::RunContext& ctx, const RuntimePlan& plan, SessionOptions options)
    : ctx_(ctx),
      device_(plan.device),
      max_steps_(plan.max_steps),
      init_from_(plan.init_from),
      options_(checked(std::move(options))),
      dist_(ctx, plan.device),
      checkpoints_(ctx.run_dir(), options_.keep_checkpoints, options_.goal, warn_sink(ctx)),
      memory_(plan.device, ctx, memory_options(options_.memory, plan)) {
  checkpoints_.share_with(dist_);
}

void TrainingSession::init_weights(torch::nn::Module& model, const WeightNameMap& rename) {
  if (!init_from_) return;
  const WeightsFile file = read_weights_file(init_from_->path);
  const WarmStartReport report = load_weights_into(model, file, init_from_->freeze, rename);
  ctx_.info("--init-from '" + file.path + "' (" + file.format + "): " + report.describe());
}

void TrainingSession::check_init_weights(const RuntimePlan& plan, torch::nn::Module& scratch,
                                         const WeightNameMap& rename) {
  if (!plan.init_from) return;
  load_weights_into(scratch, read_weights_file(plan.init_from->path), plan.init_from->freeze, rename);
}

std::optional<LoadedCheckpoint> TrainingSession::resume(TrainingState& state, const RestoreFn& restore) {
  if (!ctx_.resume()) return std::nullopt;
  std::vector<std::string> skipped;
  std::optional<LoadedCheckpoint> loaded = checkpoints_.load_latest(state, device_, &skipped);
  if (!loaded && !skipped.empty()) {
    // Training from the start would replace what the run had with a fresh model under its
    // name; the user decides (a copy of a checkpoint from elsewhere, or a new run).
    std::string why;
    for (const std::string& s : skipped) why += "\n  " + s;
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "--resume: none of the " + std::to_string(skipped.size()) +
                                              " checkpoints in '" + checkpoints_.dir() + "' loads:" + why +
                                              "\nnothing was trained or overwritten; restore a checkpoint there, or "
                                              "start a new run in another --run-dir");
  }
  if (!loaded) {
    ctx_.info("--resume: no checkpoint to resume from in '" + checkpoints_.dir() + "': training from the start");
    return std::nullopt;
  }
  if (!skipped.empty() && ctx_.rank() == 0)
    for (const std::string& line : checkpoints_.set_aside_unusable()) ctx_.warn(line);
  std::string where = restore ? restore(*loaded) : std::string();
  if (where.empty()) where = "at step " + std::to_string(loaded->step);
  ctx_.info("resumed " + where + " (" + loaded->path + ")");
  return loaded;
}

std::string TrainingSession::save(const TrainingState& state, int64_t step, std::optional<double> metric) {
  return checkpoints_.save(state, step, metric);
}

int64_t TrainingSession::step_limit(int64_t planned) const {
  return max_steps_ ? std::min(planned, *max_steps_) : planned;
}

bool TrainingSession::after_step(int64_t step, const SaveFn& save, bool save_now) {
  memory_.step(step);
  // At --max-steps the loop ends and the run's own end saves, as at any normal end.
  const bool last = max_steps_ && step >= *max_steps_;
  const bool due = save_now || (options_.checkpoint_every > 0 && step % options_.checkpoint_every == 0);
  if (due) save();
  stop_if_asked("at " + options_.step_name + " " + std::to_string(step), due ? SaveFn() : save);
  if (last && !max_steps_logged_) {
    ctx_.info("--max-steps " + std::to_string(*max_steps_) + ": training ends at " + options_.step_name + " " +
              std::to_string(step));
    max_steps_logged_ = true;
  }
  return last;
}

void TrainingSession::stop_if_asked(const std::string& where, const SaveFn& save) {
  // Collective: a rank that stopped alone would leave the others waiting in the next one.
  if (!dist_.should_stop(ctx_)) return;
  if (save) save();
  throw mlh::Error(MLH_ERR_CANCELLED, "stopped " + where + " (checkpoint saved)");
}

std::string TrainingSession::weights_path() const { return ctx_.run_dir() + "/model.safetensors"; }

std::string TrainingSession::export_weights(const torch::nn::Module& model, std::map<std::string, std::string> metadata) {
  const std::string path = weights_path();
  if (dist_.is_main()) export_module_weights(model, path, std::move(metadata));
  return path;
}

void TrainingSession::finish(torch::nn::Module& model, nlohmann::json summary) {
  if (summary.is_null()) summary = nlohmann::json::object();
  if (!summary.is_object())
    throw mlh::Error(MLH_ERR_INTERNAL, "training session: the summary must be a JSON object, got " + summary.dump());
  summary["world_size"] = dist_.world_size();
  if (max_steps_) summary["max_steps"] = *max_steps_;
  summary["ranks_agree"] = dist_.parameters_agree(model);
  ctx_.summary(summary.dump());
}

}  // namespace mlh::rt
