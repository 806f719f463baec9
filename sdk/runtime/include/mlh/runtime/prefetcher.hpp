// Batches prepared ahead of the training loop by background workers, handed out in order.
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

}  // namespace mlh::rt
