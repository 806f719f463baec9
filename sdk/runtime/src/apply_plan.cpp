#include "mlh/runtime/apply_plan.hpp"

#include <cstdlib>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/nn/module.h>

#include "mlh/device_traits.hpp"
#include "mlh/plan_fields.hpp"
#include "mlh/plan_reader.hpp"
#include "mlh/runtime/compat.hpp"
#include "mlh/runtime/memory_limit.hpp"
#include "mlh/runtime/plan_effects.hpp"
#include "mlh/runtime/seed.hpp"

#include "backends/backend.hpp"

namespace mlh::rt {

namespace {

c10::Device parse_device(const std::string& field, const std::string& text) {
  try {
    return c10::Device(text);
  } catch (const c10::Error&) {
    PlanReader::fail(field, "a LibTorch device such as cpu or cuda:0", text);
  }
}

// Seeds are full 64-bit values, beyond PlanReader's int range.
std::optional<uint64_t> parse_seed(const PlanReader& reader) {
  const PlanReader::json* v = reader.find("seed");
  if (!v) return std::nullopt;
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0))
    PlanReader::fail("seed", "a non-negative integer", *v);
  return v->get<uint64_t>();
}

std::optional<RuntimePlan::InitFrom> parse_init_from(const PlanReader& reader) {
  const std::string field = mlh::plan_field_name(mlh::PlanField::kInitFrom);
  const PlanReader::json* v = reader.find(field);
  if (!v || v->is_null()) return std::nullopt;
  const PlanReader::json* path = reader.find(field + ".path");
  if (!path || !path->is_string() || path->get<std::string>().empty())
    PlanReader::fail(field + ".path", "a file path", path ? *path : PlanReader::json());
  RuntimePlan::InitFrom init{path->get<std::string>(), {}};
  if (const PlanReader::json* freeze = reader.find(field + ".freeze")) {
    if (!freeze->is_array()) PlanReader::fail(field + ".freeze", "a list of parameter names", *freeze);
    for (const auto& name : *freeze) {
      if (!name.is_string() || name.get<std::string>().empty())
        PlanReader::fail(field + ".freeze", "a list of parameter names", *freeze);
      init.freeze.push_back(name.get<std::string>());
    }
  }
  return init;
}

}  // namespace

RuntimePlan RuntimePlan::parse(const std::string& plan_json) {
  const PlanReader reader(plan_json);
  RuntimePlan plan;
  for (const char* field : {"worker_torch_device", "torch_device"}) {
    const PlanReader::json* v = reader.find(field);
    if (!v) continue;
    if (!v->is_string()) PlanReader::fail(field, "a device string", *v);
    plan.torch_device = v->get<std::string>();
    plan.device = parse_device(field, plan.torch_device);
    break;
  }
  // The settings by their names in the plan's table (mlh/plan_fields.hpp).
  using F = PlanField;
  auto name = [](PlanField f) { return std::string(plan_field_name(f)); };
  // Each value checked by what the plan's table declares for its setting.
  if (auto v = reader.setting(name(F::kPrecision), plan_setting("precision"))) plan.precision = parse_precision(*v);
  plan.batch_size = reader.positive_integer(name(F::kBatchSize));
  plan.gradient_checkpointing = reader.boolean(name(F::kGradientCheckpointing)).value_or(false);
  if (const PlanReader::json* v = reader.find(name(F::kPreset))) {
    if (!v->is_string()) PlanReader::fail(name(F::kPreset), "a preset name", *v);
    plan.preset = v->get<std::string>();
  }
  if (auto v = reader.setting(name(F::kThreads) + ".intra_op", plan_setting("intra_op_threads")))
    plan.intra_op_threads = std::stoi(*v);
  if (auto v = reader.setting(name(F::kThreads) + ".inter_op", plan_setting("inter_op_threads")))
    plan.inter_op_threads = std::stoi(*v);
  plan.memory_fraction =
      reader.number(name(F::kMemoryFraction), [](double f) { return f > 0 && f <= 1; }, "a number in (0, 1]");
  // Byte counts beyond PlanReader::integer's int range.
  if (const PlanReader::json* v = reader.find(name(F::kMemoryLimitBytes))) {
    if (!v->is_number_integer() || v->get<int64_t>() < 1)
      PlanReader::fail(name(F::kMemoryLimitBytes), "a byte count > 0", *v);
    plan.memory_limit_bytes = v->get<int64_t>();
  }
  plan.empty_cache_steps = reader.integer(name(F::kEmptyCacheSteps), 0, "a non-negative integer").value_or(0);
  plan.pinned_memory = reader.boolean(name(F::kPinnedMemory)).value_or(false);
  plan.prefetch_factor = reader.positive_integer(name(F::kPrefetchFactor)).value_or(2);
  plan.dataloader_workers = reader.integer(name(F::kDataloaderWorkers), 0, "a non-negative integer").value_or(0);
  plan.cudnn_benchmark = reader.boolean(name(F::kCudnnBenchmark)).value_or(false);
  plan.tf32_matmul = reader.boolean(name(F::kTf32Matmul)).value_or(false);
  plan.deterministic = reader.boolean(name(F::kDeterministic)).value_or(false);
  plan.channels_last = reader.boolean(name(F::kChannelsLast)).value_or(false);
  plan.cuda_graphs = reader.boolean(name(F::kCudaGraphs)).value_or(false);
  plan.max_steps = reader.positive_integer(name(F::kMaxSteps));
  plan.seed = parse_seed(reader);
  plan.init_from = parse_init_from(reader);
  return plan;
}

void apply_plan(const RuntimePlan& plan) {
  const DeviceTraits& traits = device_traits(plan.device.str());
  const backends::Backend& backend = backends::of(plan.device);
  if (!backend.available(plan.device))
    throw Error(MLH_ERR_INVALID_ARGUMENT, "plan field 'torch_device': " + plan.device.str() + " needs a LibTorch built with " +
                                              c10::DeviceTypeName(plan.device.type()) + " (this is " + TORCH_VERSION +
                                              " without it)");

  if (plan.intra_op_threads) at::set_num_threads(*plan.intra_op_threads);
  // get_num_interop_threads() is int in 1.13 and size_t in 2.x.
  if (plan.inter_op_threads && static_cast<int>(at::get_num_interop_threads()) != *plan.inter_op_threads) {
    try {
      at::set_num_interop_threads(*plan.inter_op_threads);
    } catch (const c10::Error&) {
      TORCH_WARN("inter-op threads stay at ", at::get_num_interop_threads(), " (plan: ", *plan.inter_op_threads,
                 "): they can only be set once per process, before inter-op work starts");
    }
  }

  at::Context& context = at::globalContext();
  context.setDeterministicAlgorithms(plan.deterministic, /*warn_only=*/false);
  context.setDeterministicCuDNN(plan.deterministic);
  context.setBenchmarkCuDNN(plan.cudnn_benchmark && !plan.deterministic);
  context.setAllowTF32CuBLAS(plan.tf32_matmul);
  context.setAllowTF32CuDNN(plan.tf32_matmul);
  if (plan.deterministic) backend.prepare_deterministic();

  // The plan's memory cap, where the trait says the runtime enforces it (kWatermark is the
  // host's environment variable, set before this process started).
  if (traits.memory_cap == DeviceTraits::MemoryCap::kCachingAllocator && plan.memory_fraction)
    note_plan_effect("memory_fraction", backend.cap_caching_allocator(plan.device, *plan.memory_fraction),
                     *plan.memory_fraction);
  if (traits.memory_cap == DeviceTraits::MemoryCap::kTensorMemory && plan.memory_limit_bytes)
    set_cpu_memory_limit(plan.memory_limit_bytes);

  if (plan.seed) seed_everything(*plan.seed);
  report_plan_effects_in_summaries();
}

namespace {

// t in NHWC strides. A tensor with one channel (a first convolution's weight on grey images) or
// a 1 x 1 plane is contiguous in both layouts, so contiguous(ChannelsLast) leaves its NCHW
// strides, and a convolution then keeps the whole layer, and what follows it, in NCHW. A copy
// made with NHWC strides is what PyTorch's module.to(memory_format=torch.channels_last) makes.
at::Tensor with_channels_last_strides(const at::Tensor& t) {
  if (t.suggest_memory_format() == at::MemoryFormat::ChannelsLast) return t;
  return t.clone(at::MemoryFormat::ChannelsLast);
}

}  // namespace

void to_channels_last(torch::nn::Module& module) {
  at::NoGradGuard no_grad;
  int64_t converted = 0;
  for (auto& param : module.parameters())
    if (param.dim() == 4) {
      param.set_data(with_channels_last_strides(param));
      ++converted;
    }
  for (auto& buffer : module.buffers())
    if (buffer.dim() == 4) {
      buffer.set_data(with_channels_last_strides(buffer));
      ++converted;
    }
  count_plan_effect("channels_last", "tensors_converted", converted);
}

}  // namespace mlh::rt
