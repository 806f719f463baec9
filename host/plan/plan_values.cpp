#include "plan/plan_values.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "plan/allocator.hpp"
#include "probe/torch_backend.hpp"

namespace mlhost {

using nlohmann::json;
using mlh::PlanField;

namespace {

Source from(SourceKind kind, std::string text) { return Source{kind, std::move(text)}; }

// The inputs every decision reads, and the plan it writes.
class Decisions {
 public:
  Decisions(PlanWriter& plan, const PlanValueInputs& in)
      : plan_(plan), in_(in), req_(in.request), d_(req_.device), backend_(torch_backend(d_)) {}

  void device_facts() {
    plan_.set_fact("device", d_.id());
    plan_.set_fact("device_name", d_.name);
    plan_.set_fact("torch_device", d_.torch_device);
    plan_.set_fact("device_class", device_class_name(d_.device_class));
    plan_.set_fact("memory_total_bytes", d_.memory_total_bytes == MLH_UNKNOWN ? json(nullptr) : json(d_.memory_total_bytes));
    if (!req_.settings_file_status.empty()) plan_.set_fact("settings_file", req_.settings_file_status);
  }

  void precision();
  void batch_size();
  void gradient_checkpointing();
  void preset();
  void threads();
  void memory_limit();
  void memory_and_data();
  void backend_switches();
  void allocator();
  void max_steps();
  void init_from();

  void calibration_report() {
    if (in_.calibration_status.empty() && !in_.calibration) return;
    json calibration = in_.calibration ? in_.calibration->to_json() : json::object();
    calibration["status"] = in_.calibration_status;
    plan_.set_fact("calibration", calibration);
  }

 private:
  // The settings-file value of `key` for this device, if set (not "auto").
  std::optional<Setting> setting(const std::string& key) const {
    return req_.settings ? req_.settings->get(key, d_.kind) : std::nullopt;
  }
  static Source from_file(const Setting& s) { return from(SourceKind::kSettingsFile, "settings file " + s.origin); }

  // A resumed training run's `name` from its last launch's plan, where that ran on this
  // device: a value that changes the run's numbers is the run's for its whole life.
  const json* resumed(const char* name) const {
    const json& p = req_.resumed_plan;
    if (!p.is_object() || p.value("device", "") != d_.id() || !p.contains(name)) return nullptr;
    return &p[name];
  }
  static Source kept_from_run() {
    return from(SourceKind::kTrainedRun, "the run's own, from its last launch (plan.json): a resumed run keeps the "
                                         "values that change its numbers");
  }
  // The command line sets `name` to `now` where the resumed run had `before`: said once, since
  // the run's results will then differ from those of an uninterrupted run.
  void warn_if_run_changes(const char* name, const json& now, const json* before) {
    if (!before || *before == now) return;
    plan_.add_warning(std::string(name) + " " + before->dump() + " -> " + now.dump() +
                      " on the command line: this resumed run's results will differ from an uninterrupted run's");
  }
  // A setting from the file, else `fallback` with its own source.
  template <class Parse>
  void from_settings_or(PlanField field, const std::string& key, Parse parse, json fallback, Source source) {
    if (auto s = setting(key))
      plan_.set(field, parse(s->value), from_file(*s));
    else
      plan_.set(field, std::move(fallback), std::move(source));
  }
  const DeviceRule* rule() const { return match_device_rule(req_.rules, d_); }
  Source rule_source(const DeviceRule& r) const {
    return from(SourceKind::kRule, "rule: " + r.describe() + " (" + r.origin + ")");
  }
  // The preset the user chose in their config, if any.
  std::optional<std::string> user_preset() const {
    const json& cfg = req_.user_config;
    if (!cfg.is_object() || !cfg.contains("preset") || !cfg["preset"].is_string()) return std::nullopt;
    return cfg["preset"].get<std::string>();
  }
  bool algorithm_has_batch() const { return req_.algorithm && req_.algorithm->has_batch_size(); }
  // The source of the config's `key`: the user's config, or on a trained run the config it
  // was trained with unless this command set the key again.
  Source config_source(const std::string& key, const std::string& text) const {
    if (req_.on_trained_run && !req_.config_set_now.contains(key))
      return from(SourceKind::kTrainedRun, "the trained run's " + text);
    return from(SourceKind::kConfig, text);
  }

  PlanWriter& plan_;
  const PlanValueInputs& in_;
  const PlanRequest& req_;
  const Device& d_;
  const TorchBackend& backend_;  // what d_ is to planning: its LibTorch backend's traits
};

bool parse_bool(const std::string& v) { return v == "true"; }
json parse_int(const std::string& v) { return std::stoll(v); }
json parse_text(const std::string& v) { return json(v); }

std::string precision_words(uint32_t mask) {
  std::string out;
  for (const auto& p : precision_names(mask)) out += (out.empty() ? "" : ", ") + p;
  return out;
}

uint32_t precision_bit(const std::string& p) {
  if (p == "fp16") return MLH_PRECISION_FP16;
  if (p == "bf16") return MLH_PRECISION_BF16;
  return MLH_PRECISION_FP32;
}

void Decisions::precision() {
  std::string chosen;
  Source source;
  const json* run_precision = resumed("precision");
  if (req_.overrides.precision) {
    chosen = *req_.overrides.precision;
    source = from(SourceKind::kCommandLine, "command line --precision");
    warn_if_run_changes("precision", chosen, run_precision);
  } else if (run_precision && run_precision->is_string()) {
    chosen = run_precision->get<std::string>();
    source = kept_from_run();
  } else if (auto s = setting("precision")) {
    chosen = s->value;
    source = from_file(*s);
  }
  if (chosen.empty() && in_.calibration && in_.calibration->varies("precision")) {
    plan_.set(PlanField::kPrecision, in_.calibration->chosen.precision,
              from(SourceKind::kCalibration, calibrated_source(*in_.calibration, "precision")));
    return;
  }
  if (!chosen.empty()) {
    const bool bf16 = chosen == "bf16";
    if (!(d_.precisions & precision_bit(chosen)))
      throw PlanError("precision " + chosen + " (" + source.text + ") is not supported on " + d_.id() + " (supports " +
                      precision_words(d_.precisions) + ")" +
                      (bf16 && *backend_.bf16_needs ? std::string("; bf16 on ") + backend_.name + " needs " +
                                                          backend_.bf16_needs
                                                    : ""));
    const std::optional<std::string>& torch = req_.algorithm ? req_.algorithm->manifest.torch_version : std::nullopt;
    const int* bf16_torch = backend_.bf16_torch;
    if (bf16 && torch && !torch_version_at_least(*torch, bf16_torch[0], bf16_torch[1]))
      throw PlanError("precision bf16 (" + source.text + ") on " + d_.id() + " needs LibTorch " +
                      std::to_string(bf16_torch[0]) + "." + std::to_string(bf16_torch[1]) +
                      " or later, the first with bf16 autocast on " + backend_.name +
                      "; the algorithm was built with LibTorch " + *torch);
    if (chosen == "fp16" && (d_.limitations & MLH_LIMIT_NO_FP16_AUTOCAST))
      throw PlanError("precision fp16 (" + source.text + ") is not used on " + d_.id() +
                      ": its fp16 autocast is unreliable; use fp32");
    plan_.set(PlanField::kPrecision, chosen, source);
    return;
  }
  // auto: bf16 where an accelerator runs it fast, else fp16 on one that has it, else fp32. On
  // CPUs bf16 pays off only for some models, so auto keeps fp32 there.
  if (backend_.accelerator && (d_.fast_precisions & MLH_PRECISION_BF16))
    plan_.set(PlanField::kPrecision, "bf16", from(SourceKind::kDevice, "auto: " + d_.id() + " runs bf16 fast"));
  else if (backend_.accelerator && (d_.precisions & MLH_PRECISION_FP16) && !(d_.limitations & MLH_LIMIT_NO_FP16_AUTOCAST))
    plan_.set(PlanField::kPrecision, "fp16", from(SourceKind::kDevice, "auto: " + d_.id() + " has fp16 but no fast bf16"));
  else
    plan_.set(PlanField::kPrecision, "fp32",
              backend_.accelerator ? from(SourceKind::kDevice, "auto: no usable reduced precision on " + d_.id())
                         : from(SourceKind::kDefault, "auto: fp32 on CPU (bf16 only where an algorithm measured it faster)"));
}

// Batch size (per rank): the command line (a number, or auto: the finder), a global batch
// size (the user's config, or the preset's where the user gave no batch_size) split among the
// ranks, the user's config of the algorithm, the batch size of the preset chosen there (a task
// preset sized for its task), the settings file, the rule, the algorithm's default.
void Decisions::batch_size() {
  const json& cfg = req_.user_config;
  const DeviceRule* r = rule();
  const json* preset_batch = nullptr;
  const json* global_batch = nullptr;
  std::string global_from = "config";
  if (algorithm_has_batch() && cfg.is_object() && cfg.value("global_batch_size", json(0)).is_number_integer() &&
      cfg.value("global_batch_size", json(0)).get<int64_t>() > 0)
    global_batch = &cfg["global_batch_size"];
  if (auto name = user_preset(); name && algorithm_has_batch())
    if (const json* p = req_.algorithm->preset(*name)) {
      if (p->contains("batch_size")) preset_batch = &(*p)["batch_size"];
      if (!global_batch && !(cfg.is_object() && cfg.contains("batch_size")) && p->contains("global_batch_size") &&
          (*p)["global_batch_size"].is_number_integer() && (*p)["global_batch_size"].get<int64_t>() > 0) {
        global_batch = &(*p)["global_batch_size"];
        global_from = "preset " + *name;
      }
    }

  if (in_.batch_search) {
    plan_.set(PlanField::kBatchSize, (*in_.batch_search)["batch"],
              from(SourceKind::kBatchFinder, "batch size finder: " + in_.batch_search->value("reason", std::string())));
    json finder = *in_.batch_search;
    finder["status"] = in_.batch_search_status;
    plan_.set_fact("batch_size_finder", finder);
  } else if (req_.overrides.batch_size) {
    plan_.set(PlanField::kBatchSize, *req_.overrides.batch_size, from(SourceKind::kCommandLine, "command line --batch-size"));
  } else if (global_batch) {
    // The TRM reference's global_batch_size: the batch of one optimizer step over all ranks.
    const int64_t global = global_batch->get<int64_t>(), ranks = req_.launch.world_size;
    if (global % ranks != 0)
      throw PlanError(global_from + " global_batch_size " + std::to_string(global) + " does not divide among " +
                      std::to_string(ranks) + " ranks: give a multiple of " + std::to_string(ranks));
    plan_.set(PlanField::kBatchSize, global / ranks,
              global_from == "config"
                  ? config_source("global_batch_size", "config (global_batch_size " + std::to_string(global) + " over " +
                                                           std::to_string(ranks) + (ranks == 1 ? " rank)" : " ranks)"))
                  : from(SourceKind::kPreset, global_from + " (global_batch_size " + std::to_string(global) + " over " +
                                                  std::to_string(ranks) + (ranks == 1 ? " rank)" : " ranks)")));
  } else if (algorithm_has_batch() && cfg.is_object() && cfg.contains("batch_size")) {
    plan_.set(PlanField::kBatchSize, cfg["batch_size"], config_source("batch_size", "config (batch_size)"));
  } else if (preset_batch) {
    plan_.set(PlanField::kBatchSize, *preset_batch, from(SourceKind::kPreset, "preset " + *user_preset() + " (batch_size)"));
  } else if (auto s = setting("batch_size")) {
    plan_.set(PlanField::kBatchSize, parse_int(s->value), from_file(*s));
  } else if (r && r->batch_size) {
    plan_.set(PlanField::kBatchSize, *r->batch_size, rule_source(*r));
  } else if (algorithm_has_batch() && req_.algorithm->config_defaults.contains("batch_size")) {
    plan_.set(PlanField::kBatchSize, req_.algorithm->config_defaults["batch_size"],
              from(SourceKind::kAlgorithm, "algorithm default"));
  } else {
    plan_.set(PlanField::kBatchSize, nullptr, from(SourceKind::kDefault, "no rule for " + d_.id()));
  }
  // --print-plan with --batch-size auto and nothing cached for this config yet.
  if (!in_.batch_search && !in_.batch_search_status.empty())
    plan_.extend_source(PlanField::kBatchSize, " (--batch-size auto: " + in_.batch_search_status + ")");
}

void Decisions::gradient_checkpointing() {
  const DeviceRule* r = rule();
  if (auto s = setting("gradient_checkpointing"))
    plan_.set(PlanField::kGradientCheckpointing, parse_bool(s->value), from_file(*s));
  else if (r && r->gradient_checkpointing)
    plan_.set(PlanField::kGradientCheckpointing, *r->gradient_checkpointing, rule_source(*r));
  else
    plan_.set(PlanField::kGradientCheckpointing, false, from(SourceKind::kDefault, "default"));
}

// Preset: only one the algorithm describes means anything. A rule's preset the algorithm
// does not have is left out quietly (rules are written for every algorithm); the user's is
// an error.
void Decisions::preset() {
  const DeviceRule* r = rule();
  std::optional<std::string> preset;
  Source source;
  if (auto name = user_preset()) {
    preset = name;
    source = config_source("preset", "config (preset)");
  } else if (auto s = setting("preset")) {
    preset = s->value;
    source = from_file(*s);
  } else if (r && r->preset) {
    preset = r->preset;
    source = rule_source(*r);
  }
  if (!req_.algorithm) {
    plan_.set(PlanField::kPreset, preset ? json(*preset) : json(nullptr), preset ? source : from(SourceKind::kDefault, "default"));
  } else if (preset && req_.algorithm->presets.contains(*preset)) {
    plan_.set(PlanField::kPreset, *preset, source);
    // A preset may say how large its model is ("$parameters"), for the printed plan.
    const json& chosen = req_.algorithm->presets[*preset];
    if (chosen.is_object() && chosen.contains("$parameters")) plan_.set_fact("parameters", chosen["$parameters"]);
  } else if (preset && source.kind != SourceKind::kRule) {
    std::string known;
    for (const auto& [name, unused] : req_.algorithm->presets.items()) known += (known.empty() ? "" : ", ") + name;
    throw PlanError("preset '" + *preset + "' (" + source.text + ") is not one of the algorithm's presets (" +
                    (known.empty() ? "none" : known) + ")");
  } else {
    plan_.set(PlanField::kPreset, nullptr,
              from(SourceKind::kDefault, preset ? "the algorithm has no preset '" + *preset + "'" : "default"));
  }
}

void Decisions::threads() {
  json threads = json::object();
  Source source;
  const json* run_threads = resumed("threads");
  if (run_threads && !(run_threads->is_object() && run_threads->contains("intra_op") &&
                      run_threads->at("intra_op").is_number_integer()))
    run_threads = nullptr;
  if (req_.overrides.threads) {
    threads["intra_op"] = *req_.overrides.threads;
    source = from(SourceKind::kCommandLine, "command line --threads");
    if (run_threads) warn_if_run_changes("threads", threads["intra_op"], &run_threads->at("intra_op"));
  } else if (run_threads) {
    threads = *run_threads;
    source = kept_from_run();
  } else if (auto s = setting("intra_op_threads")) {
    threads["intra_op"] = parse_int(s->value);
    source = from_file(*s);
  } else if (in_.calibration && in_.calibration->varies("threads")) {
    threads["intra_op"] = in_.calibration->chosen.threads;
    source = from(SourceKind::kCalibration, calibrated_source(*in_.calibration, "threads"));
  } else if (d_.recommended_threads > 0) {
    threads["intra_op"] = d_.recommended_threads;
    source = from(SourceKind::kDevice, "device: recommended by the " + d_.plugin + " plugin");
  } else {
    threads["intra_op"] = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
    source = from(SourceKind::kDefault, "default: all online CPUs");
  }
  // Beside other runs, a run keeps its threads by default: another thread count sums in another
  // order, and the same command must compute the same numbers whatever else ran when it
  // started. Passive waits (backend_switches) keep the oversubscription cheap: two ProtoNet
  // runs of 2 threads on 2 cores each trained at 0.91x of the 1-thread split's speed
  // (docs/benchmarks.md, "A shared machine"), where spinning waits made one crawl 90x slower.
  // With shared_machine_threads = split, a run takes the cores other runs' workers leave, or a
  // fair share when they hold them all. Runs started at the same moment, still planning, hold
  // nothing yet: each is counted at the fair share all of them will get, so that runs started
  // together split the cores.
  const MachineShare& share = req_.sharing;
  const int other_runs = share.other_workers + share.other_runs_planning;
  const bool kept = source.kind == SourceKind::kTrainedRun;
  const auto split_setting = setting("shared_machine_threads");
  const bool split = split_setting && split_setting->value == "split";
  if (split && !backend_.accelerator && !chosen_by_user(source.kind) && !kept && share.shared() && other_runs > 0) {
    const int64_t cores = d_.recommended_threads > 0 ? d_.recommended_threads : share.online_cpus;
    const int64_t each = std::max<int64_t>(1, cores / (other_runs + 1));
    const int64_t left = cores - share.other_worker_threads - share.other_runs_planning * each;
    const int64_t fair = std::max<int64_t>(1, left >= 1 ? left : cores / (other_runs + 1));
    if (fair < threads["intra_op"].get<int64_t>()) {
      threads["intra_op"] = fair;
      source.text += "; " + std::to_string(fair) + " on a shared machine (" + share.describe() +
                     "; shared_machine_threads = split, settings file " + split_setting->origin + ")";
    }
  }
  // Inter-op pools only help graphs with independent branches, and compete with intra-op
  // threads on small machines.
  if (!(kept && threads.contains("inter_op"))) {  // a resumed run keeps its own, with its intra-op ones
    if (auto s = setting("inter_op_threads")) {
      threads["inter_op"] = parse_int(s->value);
      source.text += "; inter-op: settings file " + s->origin;
    } else {
      threads["inter_op"] = 1;
    }
  }
  plan_.set(PlanField::kThreads, threads, source);
}

// The memory a run may use. GPUs: a fraction of the device's memory for the caching
// allocator (none by default: the whole GPU). CPUs: a cap on LibTorch's tensor memory
// (runtime memory_limit.hpp), 90% of the memory by default, leaving a margin for the system.
// memory_limit_gb caps either in GiB as well; the smaller cap counts.
void Decisions::memory_limit() {
  const bool cuda_like = backend_.memory_cap == TorchBackend::MemoryCap::kCachingAllocator;
  const bool cpu = backend_.memory_cap == TorchBackend::MemoryCap::kTensorMemory;
  const bool known_total = d_.memory_total_bytes != MLH_UNKNOWN && d_.memory_total_bytes > 0;
  std::optional<double> fraction;
  Source source;
  if (auto s = setting("memory_fraction")) {
    fraction = std::stod(s->value);
    source = from_file(*s);
  } else if (cpu) {
    fraction = 0.9;
    source = from(SourceKind::kDefault, "default: 90% of the memory, a margin for the system");
  }
  if (auto s = setting("memory_limit_gb")) {
    const double gib = std::stod(s->value);
    if (!known_total)
      throw PlanError("memory_limit_gb (settings file " + s->origin + "): the memory of " + d_.id() + " is unknown");
    const double as_fraction =
        std::min(1.0, gib * static_cast<double>(1LL << 30) / static_cast<double>(d_.memory_total_bytes));
    if (!fraction || as_fraction < *fraction) {
      fraction = as_fraction;
      source = from(SourceKind::kSettingsFile, "settings file " + s->origin + " (" + s->value + " GiB)");
    }
  }
  if (!fraction) {
    plan_.set(PlanField::kMemoryFraction, nullptr, from(SourceKind::kDefault, "default: no limit"));
  } else {
    plan_.set(PlanField::kMemoryFraction, *fraction, source);
    // Under a memory cap, PyTorch's CUDA allocator should give cached blocks back before it
    // reaches the cap rather than fail: its garbage_collection_threshold does that. And a
    // large freed block must not be split for small requests: on an H100 under a 5% cap, a
    // 64 MiB allocation took a piece of a step's freed 2.97 GiB block, the segment could not be
    // given back, and the next step's 2.97 GiB found 2.94 GiB reserved but unusable: out of
    // memory at a batch the finder had measured to fit. max_split_size_mb keeps blocks from
    // 256 MiB up whole.
    if (cuda_like)
      plan_.set(PlanField::kMemory, {{"garbage_collection_threshold", 0.8}, {"max_split_size_mb", 256}},
                from(SourceKind::kDefault, "default: under memory_fraction, reclaim cached memory and keep large blocks whole"));
  }
  // The cap in bytes where the fraction is of the device's memory: the CPU's tensor-memory cap,
  // CUDA's caching allocator. (MPS's high watermark is a share of Metal's recommended working
  // set, which the probe does not know.)
  if ((cpu || cuda_like) && fraction && known_total)
    plan_.set(PlanField::kMemoryLimitBytes, std::llround(*fraction * static_cast<double>(d_.memory_total_bytes)),
              from(SourceKind::kDevice, "memory_fraction x " + format_bytes(d_.memory_total_bytes) +
                                            (cpu ? " (CPU tensor memory)" : " (the caching allocator's cap)")));
}

void Decisions::memory_and_data() {
  memory_limit();
  from_settings_or(PlanField::kEmptyCacheSteps, "empty_cache_steps", parse_int, 0, from(SourceKind::kDefault, "default: never"));
  from_settings_or(PlanField::kPinnedMemory, "pinned_memory", parse_bool, backend_.pinned_copies,
                   from(SourceKind::kDefault, backend_.pinned_copies ? "default: on for a discrete GPU" : "default: off"));
  from_settings_or(PlanField::kPrefetchFactor, "prefetch_factor", parse_int, 2, from(SourceKind::kDefault, "default"));
  // On a CPU run, loader workers would take cores from the computation itself.
  const long cpus = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
  const long workers = backend_.accelerator ? std::min<long>(4, std::max<long>(1, cpus / 2)) : 0;
  from_settings_or(PlanField::kDataloaderWorkers, "dataloader_workers", parse_int, workers,
                   from(SourceKind::kDefault, backend_.accelerator ? "default: half the CPUs, at most 4" : "default: none on a CPU run"));
}

void Decisions::backend_switches() {
  from_settings_or(PlanField::kOmpProcBind, "omp_proc_bind", parse_text, nullptr,
                   from(SourceKind::kDefault, "default: the OpenMP runtime's"));
  // Idle OpenMP threads spin for a while before they sleep: on cores another run needs, that
  // spinning is what slowed two runs on two cores 70x.
  if (req_.sharing.shared())
    from_settings_or(PlanField::kOmpWaitPolicy, "omp_wait_policy", parse_text, "passive",
                     from(SourceKind::kDefault, "shared machine (" + req_.sharing.describe() +
                                                    "): idle threads sleep rather than spin on others' cores"));
  else
    from_settings_or(PlanField::kOmpWaitPolicy, "omp_wait_policy", parse_text, nullptr,
                     from(SourceKind::kDefault, req_.sharing.looked ? "default: the OpenMP runtime's (the machine is not shared)"
                                                                    : "default: the OpenMP runtime's"));
  from_settings_or(PlanField::kCudnnBenchmark, "cudnn_benchmark", parse_bool, backend_.cudnn,
                   from(SourceKind::kDefault, backend_.cudnn ? "default: on for CUDA" : "default: off (cuDNN is CUDA's)"));
  const bool tf32 = backend_.tf32 && (d_.fast_precisions & MLH_PRECISION_TF32) != 0;
  from_settings_or(PlanField::kTf32Matmul, "tf32_matmul", parse_bool, tf32,
                   from(SourceKind::kDefault, tf32 ? "default: the device has TF32" : "default: no TF32 here"));
  from_settings_or(PlanField::kDeterministic, "deterministic", parse_bool, false, from(SourceKind::kDefault, "default"));
  // A small step (a ProtoNet episode) is bound by launching its kernels; a replayed graph
  // launches them at once. The algorithm says whether its step can be captured.
  from_settings_or(PlanField::kCudaGraphs, "cuda_graphs", parse_bool, backend_.graphs,
                   from(SourceKind::kDefault, backend_.graphs ? "default: on for CUDA where the algorithm captures its step"
                                                              : "default: off (CUDA graphs are CUDA's)"));
  // cuDNN's fastest convolutions (tensor cores, reduced precision) read NHWC, and so do
  // oneDNN's on a CPU: ProtoNet's episode on an AVX512-BF16 EPYC ran 1.2x (fp32) and 1.4x (bf16)
  // in NHWC against NCHW, with its fused block in both layouts.
  const bool cpu = !backend_.accelerator;
  from_settings_or(PlanField::kChannelsLast, "channels_last", parse_bool, backend_.cudnn || cpu,
                   from(SourceKind::kDefault,
                        backend_.cudnn ? "default: on for CUDA (cuDNN's tensor-core convolutions want NHWC)"
                        : cpu          ? "default: on for a CPU (oneDNN's convolutions run NHWC)"
                                       : "default: off"));
}

// The worker's allocator: the command line, the settings file, a calibration, else jemalloc.
// A preloaded allocator whose library is missing falls back (allocator_fallbacks), and the
// source says so.
void Decisions::allocator() {
  std::string asked;
  Source source;
  if (req_.overrides.allocator) {
    asked = *req_.overrides.allocator;
    source = from(SourceKind::kCommandLine, "command line --allocator");
  } else if (auto s = setting("allocator")) {
    asked = s->value;
    source = from_file(*s);
  } else if (in_.calibration && in_.calibration->varies("allocator")) {
    asked = in_.calibration->chosen.allocator;
    source = from(SourceKind::kCalibration, calibrated_source(*in_.calibration, "allocator"));
  }
  if (built_with_address_sanitizer()) {
    plan_.set(PlanField::kAllocator, {{"name", "glibc"}},
              from(SourceKind::kDefault, "AddressSanitizer build: the sanitizer owns malloc" +
                                             (asked.empty() ? "" : " (" + asked + " from " + source.text + " not used)")));
    return;
  }
  if (asked.empty()) {
    asked = "jemalloc";
    source = from(SourceKind::kDefault, "default: glibc's own thresholds unmap large tensors after every step");
  }
  const char* search_path = req_.allocators.path ? req_.allocators.path->c_str() : nullptr;
  std::vector<std::string> chain{asked};
  for (const std::string& fallback : allocator_fallbacks(asked)) chain.push_back(fallback);
  std::optional<json> allocator;
  std::string missing;
  for (const std::string& candidate : chain) {
    allocator = allocator_object(candidate, search_path, req_.allocators.system);
    if (allocator) break;
    missing += (missing.empty() ? "" : ", ") + allocator_library_file(candidate);
  }
  const std::string chosen = (*allocator)["name"];  // the chain ends with glibc-tuned, always there
  if (!missing.empty()) source.text += "; " + missing + " not found, so " + chosen;

  json& settings = (*allocator)["settings"];
  auto tunable = [&](const char* key, const char* setting_key, bool number) {
    if (auto s = setting(setting_key)) {
      settings[key] = number ? json(std::stoll(s->value)) : json(s->value);
      source.text += "; " + std::string(setting_key) + " from settings file " + s->origin;
    }
  };
  if (chosen == "glibc-tuned") {
    tunable("mmap_threshold", "malloc_mmap_threshold", true);
    tunable("trim_threshold", "malloc_trim_threshold", true);
    tunable("top_pad", "malloc_top_pad", true);
  } else if (chosen == "jemalloc") {
    tunable("conf", "jemalloc_conf", false);
  }
  plan_.set(PlanField::kAllocator, *allocator, source);
}

}  // namespace

bool torch_version_at_least(const std::string& version, int major, int minor) {
  int got_major = 0, got_minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &got_major, &got_minor) != 2) return true;
  return got_major > major || (got_major == major && got_minor >= minor);
}

// How long the run trains: the algorithm's config, unless --max-steps ends it sooner.
void Decisions::max_steps() {
  if (req_.overrides.max_steps) {
    const bool from_env = req_.overrides.max_steps_from == "MLH_MAX_STEPS";
    plan_.set(PlanField::kMaxSteps, *req_.overrides.max_steps,
              from(SourceKind::kCommandLine, from_env ? "environment MLH_MAX_STEPS" : "command line --max-steps"));
  } else
    plan_.set(PlanField::kMaxSteps, nullptr, from(SourceKind::kDefault, "default: the algorithm's config"));
}

// Where the model's weights start: the algorithm's initialization unless --init-from names a file.
void Decisions::init_from() {
  if (req_.overrides.init_from)
    plan_.set(PlanField::kInitFrom, *req_.overrides.init_from, from(SourceKind::kCommandLine, "command line --init-from"));
  else
    plan_.set(PlanField::kInitFrom, nullptr, from(SourceKind::kDefault, "default: the algorithm's initialization"));
}

void decide_plan_values(PlanWriter& plan, const PlanValueInputs& in) {
  Decisions d(plan, in);
  d.device_facts();
  d.precision();
  d.batch_size();
  d.gradient_checkpointing();
  d.preset();
  d.threads();
  d.memory_and_data();
  d.backend_switches();
  d.allocator();
  d.max_steps();
  d.init_from();
  d.calibration_report();
}

}  // namespace mlhost
