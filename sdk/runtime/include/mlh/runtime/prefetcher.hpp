// Batches prepared ahead of the training loop by background workers, handed out in order.
// The plan's dataloader_workers and prefetch_factor size it; the run's report counts what
// the workers made (plan_effects.hpp: dataloader_workers.batches_by_workers).
//
//   mlh::rt::Prefetcher<Batch> batches(
//       [&](int64_t i) -> std::optional<Batch> { return i < n ? make(i) : std::nullopt; },
//       mlh::rt::prefetch_depth(plan.prefetch_factor, plan.dataloader_workers),
//       plan.dataloader_workers);
//   while (auto batch = batches.next()) train_step(*batch);
//
// The producer is called from the worker threads, possibly from several at once, so it must
// be safe to call concurrently for different indices (read-only data plus per-call state).
// Batches come out of next() in index order whatever the number of workers, so a run is
// reproducible whether or not data loading is parallel. next() and stop() belong to the
// consumer's thread.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "mlh/runtime/plan_effects.hpp"

namespace mlh::rt {

// Batches kept ahead of the consumer for the plan's prefetch_factor and dataloader_workers:
// each worker keeps prefetch_factor batches in hand, as in PyTorch's DataLoader; a
// synchronous loader (no workers) still counts as one for the depth.
inline int64_t prefetch_depth(int64_t prefetch_factor, int64_t workers) {
  return std::max<int64_t>(1, prefetch_factor) * std::max<int64_t>(1, workers);
}

template <class Batch>
class Prefetcher {
 public:
  // Returns the batch at `index`, or nullopt when the data ends before it. Indices past the
  // end may still be asked for (workers run ahead) and must keep returning nullopt.
  using Producer = std::function<std::optional<Batch>(int64_t index)>;

  // depth: how many batches may be produced but not yet taken (at least 1).
  // workers: background threads; 0 produces each batch inside next().
  Prefetcher(Producer producer, int64_t depth, int workers)
      : producer_(std::move(producer)), depth_(depth) {
    if (!producer_) throw std::invalid_argument("Prefetcher: no producer");
    if (depth < 1) throw std::invalid_argument("Prefetcher: depth must be at least 1");
    if (workers < 0) throw std::invalid_argument("Prefetcher: workers must be 0 or more");
    note_plan_effect("dataloader_workers", "threads", static_cast<int64_t>(workers));
    note_plan_effect("prefetch_factor", "batches_ahead", workers > 0 ? depth : int64_t{0});
    threads_.reserve(static_cast<size_t>(workers));
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }

  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  ~Prefetcher() { stop(); }

  // The next batch in index order; nullopt at the end of the data or after stop(). An
  // exception thrown by the producer for an index is rethrown here, in that index's turn;
  // the call after it goes on with the following index.
  std::optional<Batch> next() {
    if (threads_.empty()) return next_synchronously();
    std::unique_lock<std::mutex> lock(mutex_);
    ready_changed_.wait(lock, [&] { return stopping_ || next_out_ >= end_ || ready_.count(next_out_); });
    if (stopping_ || next_out_ >= end_) return std::nullopt;
    Slot slot = std::move(ready_.extract(next_out_).mapped());
    ++next_out_;
    lock.unlock();
    // One more batch may now be produced.
    room_changed_.notify_all();
    if (slot.error) std::rethrow_exception(slot.error);
    return std::move(slot.batch);
  }

  // Wakes and joins every worker. A producer call already running is waited for (it cannot
  // be interrupted); no new one starts. Safe to call more than once.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    room_changed_.notify_all();
    ready_changed_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  struct Slot {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  std::optional<Batch> next_synchronously() {
    if (stopping_ || next_out_ >= end_) return std::nullopt;
    const int64_t index = next_out_++;  // advanced first so that a throw moves past the index
    std::optional<Batch> batch = producer_(index);
    if (!batch) end_ = next_out_ = index;
    return batch;
  }

  void work() {
    for (;;) {
      int64_t index;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        // Bounded by what the consumer has taken, not by what is queued: a slow index
        // must not let the others run arbitrarily far ahead.
        room_changed_.wait(lock, [&] {
          return stopping_ || next_in_ >= end_ || next_in_ < next_out_ + depth_;
        });
        if (stopping_ || next_in_ >= end_) return;
        index = next_in_++;
      }
      Slot slot;
      try {
        slot.batch = producer_(index);
      } catch (...) {
        slot.error = std::current_exception();
      }
      if (slot.batch) count_plan_effect("dataloader_workers", "batches_by_workers");
      bool ended = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!slot.error && !slot.batch && index < end_) {
          end_ = index;
          ended = true;
          // Batches produced past the end by faster workers will never be taken.
          ready_.erase(ready_.lower_bound(end_), ready_.end());
        }
        if (index < end_) ready_.emplace(index, std::move(slot));
      }
      ready_changed_.notify_all();
      // Other workers waiting for room must see the end and exit.
      if (ended) room_changed_.notify_all();
    }
  }

  const Producer producer_;
  const int64_t depth_;
  std::mutex mutex_;
  std::condition_variable room_changed_;   // workers wait here for room ahead of the consumer
  std::condition_variable ready_changed_;  // the consumer waits here for its next index
  std::map<int64_t, Slot> ready_;          // produced, not yet taken, by index
  int64_t next_in_ = 0;                    // the next index a worker will produce
  int64_t next_out_ = 0;                   // the next index next() hands out
  int64_t end_ = std::numeric_limits<int64_t>::max();  // first index with no batch
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // joined by stop() before the members above go
};

// A data source whose draws depend on each other (a sampler with its own random generator)
// behind a Prefetcher: the workers take the draws one at a time in index order, so the batches
// are those of drawing sequentially, and prepare them (tensor assembly, pinning) in parallel.
// Each batch comes with the source's state after its draw, so a checkpoint records where the
// data stood after the last batch trained on, however far the workers ran ahead.
//
//   OrderedPrefetcher<Batch, Ready, json> batches([&] { return sampler.next(); },
//       [&] { return sampler.state(); }, [&](Batch b) { return make_tensors(b); }, depth, workers);
//   Ready r = batches.next();  ...  checkpoint["sampler"] = batches.state();
//
// The source's draw and state are only called under the ordering lock, never concurrently.
// Load a saved state into the source before constructing this: it starts drawing at once.
template <class Draw, class Ready, class State>
class OrderedPrefetcher {
 public:
  OrderedPrefetcher(std::function<Draw()> draw, std::function<State()> state, std::function<Ready(Draw)> prepare,
                    int64_t depth, int workers)
      : draw_(std::move(draw)),
        source_state_(std::move(state)),
        prepare_(std::move(prepare)),
        consumed_state_(source_state_()),
        batches_([this](int64_t index) { return produce(index); }, depth, workers) {}

  // The next batch (the source never ends); an error of its draw or preparation is rethrown.
  Ready next() {
    std::optional<Item> item = batches_.next();
    if (!item) throw std::logic_error("OrderedPrefetcher: stopped");
    consumed_state_ = std::move(item->state_after);
    return std::move(item->ready);
  }

  // The source's state after the last batch next() returned (before the first: at construction).
  const State& state() const { return consumed_state_; }

 private:
  struct Item {
    Ready ready;
    State state_after;
  };

  std::optional<Item> produce(int64_t index) {
    std::optional<Draw> drawn;
    std::optional<State> after;
    {
      std::unique_lock<std::mutex> lock(turn_mutex_);
      turn_changed_.wait(lock, [&] { return next_draw_ == index; });
      // The turn passes on whether or not the draw throws: the next index must not wait forever.
      struct PassTurn {
        OrderedPrefetcher* self;
        ~PassTurn() {
          ++self->next_draw_;
          self->turn_changed_.notify_all();
        }
      } pass{this};
      drawn.emplace(draw_());
      after.emplace(source_state_());
    }
    return Item{prepare_(std::move(*drawn)), std::move(*after)};
  }

  std::function<Draw()> draw_;
  std::function<State()> source_state_;
  std::function<Ready(Draw)> prepare_;
  std::mutex turn_mutex_;
  std::condition_variable turn_changed_;
  int64_t next_draw_ = 0;  // the index whose draw is next; guarded by turn_mutex_
  State consumed_state_;
  Prefetcher<Item> batches_;  // last: its workers use the members above, and stop first
};

}  // namespace mlh::rt
