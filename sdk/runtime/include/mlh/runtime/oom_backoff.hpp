// A training step that survives running out of memory. The step's global batch of `rows`
// rows runs as micro-batches of at most micro_batch() rows whose gradients accumulate, so the
// optimizer sees the same global batch, loss scaling and learning rate. When a micro-batch runs
// out of memory (CUDA's allocator, or the CPU cap of memory_limit.hpp), the step is undone
// (gradients zeroed, the RNG state and the modules' buffers as they were) and redone with half
// the micro-batch, down to one row; from then on every step uses the smaller micro-batch. One
// row that does not fit is an mlh::Error(MLH_ERR_OUT_OF_MEMORY) naming the memory limit and the
// micro-batch tried. Each back-off is logged, counted (backoffs(), the metric
// train/oom_backoffs) and kept in checkpoints (state()), so a resumed run starts small.
//
//   mlh::rt::MicroBatchedStep micro(ctx);
//   micro.run(batch_rows, {
//       [&] { optimizer.zero_grad(); },
//       [&](int64_t begin, int64_t count, double weight) {
//         (loss_of(rows(begin, count)) * weight).backward();  // weight = count / batch_rows
//       },
//       [&] { optimizer.step(); }}, device, {&model});
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

namespace mlh {
class RunContext;
}
namespace torch::nn {
class Module;
}

namespace mlh::rt {

// True for LibTorch's out-of-memory errors: c10::OutOfMemoryError (CUDA's caching allocator,
// the CPU cap), 1.13's "DefaultCPUAllocator: not enough memory" and "CUDA out of memory".
bool is_out_of_memory(const std::exception& e);

class MicroBatchedStep {
 public:
  struct Callbacks {
    std::function<void()> zero_grad;  // before every attempt
    // Forward and backward of rows [begin, begin + count) with the loss multiplied by
    // `weight` (count / rows for a mean over the batch, 1 for a loss already summed / rows).
    std::function<void(int64_t begin, int64_t count, double weight)> accumulate;
    std::function<void()> step;  // once every micro-batch ran: the optimizer step
  };

  using Log = std::function<void(const std::string&)>;
  using Metric = std::function<void(const std::string&, double)>;

  // `micro_batch` 0: whole batches until memory runs out.
  explicit MicroBatchedStep(Log warn = nullptr, Metric metric = nullptr, int64_t micro_batch = 0);
  // Warnings and the metric through the run's host (which must outlive this object).
  explicit MicroBatchedStep(const mlh::RunContext& ctx, int64_t micro_batch = 0);

  // One step over `rows` rows. `modules`' buffers (batch-norm statistics, ...) are restored
  // before a retry, as are LibTorch's and the host's random generators.
  void run(int64_t rows, const Callbacks& callbacks, c10::Device device,
           const std::vector<torch::nn::Module*>& modules = {});

  // The micro-batch a step of `rows` rows runs with now.
  int64_t micro_batch(int64_t rows) const;
  int64_t backoffs() const { return backoffs_; }

  // Off for the batch finder's trials: there an out-of-memory error must reach the finder
  // (the batch does not fit) instead of being absorbed by a smaller micro-batch.
  void set_backoff(bool enabled) { backoff_ = enabled; }

  nlohmann::json state() const;  // {"micro_batch": n, "backoffs": k}
  void load_state(const nlohmann::json& state);

 private:
  Log warn_;
  Metric metric_;
  int64_t micro_ = 0;
  int64_t backoffs_ = 0;
  bool backoff_ = true;
};

}  // namespace mlh::rt
