// The largest batch that fits (see batch_finder.hpp).
#include <mlh/runtime/batch_finder.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <mlh/device_traits.hpp>
#include <mlh/plan_reader.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/memory.hpp>
#include <mlh/runtime/memory_limit.hpp>
#include <mlh/runtime/oom_backoff.hpp>

namespace mlh::rt {
namespace {

std::string rate(double items_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g/s", items_per_s);
  return buf;
}

}  // namespace

BatchSearchOptions BatchSearchOptions::from_plan(const std::string& plan_json) {
  const PlanReader plan(plan_json);
  BatchSearchOptions o;
  if (auto v = plan.positive_integer("calibration.batch_search.start")) o.start = *v;
  if (auto v = plan.positive_integer("calibration.batch_search.max")) o.max = *v;
  if (auto v = plan.number("calibration.batch_search.seconds", [](double s) { return s > 0 && s <= 3600; },
                           "a number of seconds in (0, 3600]"))
    o.seconds = *v;
  if (o.max < o.start)
    PlanReader::fail("calibration.batch_search.max", "at least calibration.batch_search.start (" + std::to_string(o.start) + ")",
                     PlanReader::json(o.max));
  return o;
}

nlohmann::json BatchSearchResult::to_json() const {
  nlohmann::json tried = nlohmann::json::array();
  for (const BatchTrial& t : trials)
    tried.push_back({{"batch", t.batch}, {"fits", t.fits}, {"throughput", t.throughput}, {"peak_bytes", t.peak_bytes},
                     {"why", t.why}});
  return {{"batch", batch}, {"reason", reason}, {"trials", tried}, {"complete", complete}};
}

BatchSearchResult find_batch_size(const BatchTrialFn& trial, c10::Device device, const BatchSearchOptions& o) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.seconds * 1000));
  const std::optional<int64_t> usable =
      o.memory_limit_bytes ? std::optional<int64_t>(static_cast<int64_t>((1.0 - o.headroom) * static_cast<double>(*o.memory_limit_bytes)))
                           : std::nullopt;
  BatchSearchResult r;
  auto attempt = [&](int64_t batch) -> const BatchTrial& {
    BatchTrial t;
    t.batch = batch;
    reset_peak_memory(device);
    try {
      t.throughput = trial(batch);
      // The allocator's peak, not the tensors': on an H100 under a 5% fraction, 30 rows
      // "fitted" at a tensor peak of 3.03 of 3.96 GiB, and training at 30 then hit the cap.
      t.peak_bytes = capped_memory_peak(device).value_or(0);
      t.fits = !usable || t.peak_bytes <= *usable;
      if (!t.fits)
        t.why = "its peak of " + format_gib(t.peak_bytes) + " leaves less than " + std::to_string(static_cast<int>(o.headroom * 100)) +
                "% of the " + format_gib(*o.memory_limit_bytes) + " limit free";
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      t.why = "out of memory";
    }
    empty_device_cache(device);
    r.trials.push_back(t);
    return r.trials.back();
  };
  auto out_of_time = [&] { return Clock::now() >= deadline; };

  std::optional<BatchTrial> good, bad;
  std::string stopped;
  int64_t batch = std::min(o.start, o.max);
  BatchTrial t = attempt(batch);
  // A start that does not fit (the plan's batch / 8 from a rule written for a larger card, or
  // a memory fraction the user lowered): halve until a batch fits, then bisect up from there.
  while (!t.fits && batch > 1 && !out_of_time()) {
    bad = t;
    batch /= 2;
    t = attempt(batch);
  }
  if (!t.fits) {
    bad = t;
  } else if (bad) {
    good = t;
  } else {
    for (;;) {
      if (!t.fits) {
        bad = t;
        break;
      }
      if (good && t.throughput < good->throughput * (1.0 + o.min_gain)) {
        // Within the margin is noise: the smaller batch, which leaves more memory free.
        stopped = "larger batches stop paying (" + std::to_string(t.batch) + " ran at " + rate(t.throughput) + ")";
        break;
      }
      good = t;
      if (batch >= o.max) {
        stopped = std::to_string(batch) + " is the largest allowed";
        break;
      }
      if (out_of_time()) {
        r.complete = false;
        break;
      }
      batch = std::min(batch * 2, o.max);
      t = attempt(batch);
    }
  }
  // Between the last batch that fitted and the first that did not, to within an eighth.
  while (good && bad && stopped.empty() && bad->batch - good->batch > std::max<int64_t>(1, good->batch / 8)) {
    if (out_of_time()) {
      r.complete = false;
      break;
    }
    const BatchTrial mid = attempt(good->batch + (bad->batch - good->batch) / 2);
    (mid.fits ? good : bad) = mid;
  }

  if (!good) {
    r.reason = "even a batch of " + std::to_string(bad ? bad->batch : o.start) + " does not fit (" + (bad ? bad->why : "not tried") + ")";
    return r;
  }
  r.batch = good->batch;
  r.reason = std::to_string(good->batch) + " fits";
  if (good->peak_bytes > 0)
    r.reason += " (peak " + format_gib(good->peak_bytes) + (o.memory_limit_bytes ? " of " + format_gib(*o.memory_limit_bytes) : "") + ")";
  r.reason += " at " + rate(good->throughput);
  if (bad) r.reason += "; " + std::to_string(bad->batch) + " does not (" + bad->why + ")";
  if (!stopped.empty()) r.reason += "; " + stopped;
  if (!r.complete) r.reason += "; the time bound stopped the search";
  return r;
}

std::optional<int64_t> planned_memory_limit(const RuntimePlan& plan) {
  // A tensor-memory cap is in bytes; a fraction of the device's memory elsewhere.
  if (device_traits(plan.device.str()).memory_cap == DeviceTraits::MemoryCap::kTensorMemory) return plan.memory_limit_bytes;
  if (!plan.memory_fraction) return std::nullopt;
  const std::optional<int64_t> total = device_memory_total(plan.device);
  if (!total) return std::nullopt;
  return static_cast<int64_t>(*plan.memory_fraction * static_cast<double>(*total));
}

}  // namespace mlh::rt
