// `host --benchmark`: the table (or JSON) of the results an algorithm's benchmark command
// put in its run summary as {"benchmarks": [{name, iterations, median_ms, p10_ms, p90_ms,
// mean_ms, stddev_ms, items_per_iteration, throughput, unit}, ...]}.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mlhost {

// Both name the device, precision, intra-op threads and allocator the benchmarks ran with:
// `worker_allocator` is what the worker reported (summary.json's worker.allocator); empty:
// the plan's. Throws std::runtime_error when `summary_result` holds no "benchmarks" array.
std::string benchmark_table(const nlohmann::json& summary_result, const nlohmann::json& plan,
                            const std::string& worker_allocator = "");
nlohmann::json benchmark_json(const nlohmann::json& summary_result, const nlohmann::json& plan,
                              const std::string& worker_allocator = "");

}  // namespace mlhost
