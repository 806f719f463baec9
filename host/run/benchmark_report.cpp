#include "run/benchmark_report.hpp"

#include <cstdio>
#include <stdexcept>

namespace mlhost {

using nlohmann::json;

namespace {

const json& results_of(const json& summary_result) {
  if (!summary_result.is_object() || !summary_result.contains("benchmarks") || !summary_result["benchmarks"].is_array())
    throw std::runtime_error("the algorithm's benchmark command reported no \"benchmarks\" in its summary");
  return summary_result["benchmarks"];
}

double number(const json& r, const char* key) { return r.contains(key) && r[key].is_number() ? r[key].get<double>() : 0; }

std::string allocator_of(const json& plan, const std::string& worker_allocator) {
  if (!worker_allocator.empty()) return worker_allocator;
  return plan.contains("allocator") && plan["allocator"].is_object() ? plan["allocator"].value("name", "") : "";
}

}  // namespace

json benchmark_json(const json& summary_result, const json& plan, const std::string& worker_allocator) {
  return {{"device", plan.value("device", "")},
          {"device_name", plan.value("device_name", "")},
          {"precision", plan.value("precision", "")},
          {"threads", plan.value("threads", json::object())},
          {"allocator", allocator_of(plan, worker_allocator)},
          {"benchmarks", results_of(summary_result)},
          {"notes", summary_result.value("notes", json::array())}};
}

std::string benchmark_table(const json& summary_result, const json& plan, const std::string& worker_allocator) {
  const json& results = results_of(summary_result);
  const json threads = plan.value("threads", json::object());
  std::string out = "Benchmarks on " + plan.value("device", std::string("?")) + " (" +
                    plan.value("device_name", std::string("?")) + "), precision " +
                    plan.value("precision", std::string("?"));
  if (threads.contains("intra_op")) out += ", " + threads["intra_op"].dump() + " intra-op threads";
  const std::string allocator = allocator_of(plan, worker_allocator);
  if (!allocator.empty()) out += ", allocator " + allocator;
  out += "\n";
  // A peak-memory column only when some benchmark knows its peak (CUDA).
  bool peaks = false;
  for (const json& r : results) peaks = peaks || (r.contains("peak_memory_bytes") && r["peak_memory_bytes"].is_number());
  char line[256];
  std::snprintf(line, sizeof line, "  %-32s %8s %10s %10s %10s %16s%s\n", "benchmark", "iters", "median ms", "p10 ms",
                "p90 ms", "throughput", peaks ? "   peak MiB" : "");
  out += line;
  for (const json& r : results) {
    const std::string unit = r.value("unit", std::string("items")) + "/s";
    char throughput[64], peak[32] = "";
    std::snprintf(throughput, sizeof throughput, "%.1f %s", number(r, "throughput"), unit.c_str());
    if (peaks) {
      if (r.contains("peak_memory_bytes") && r["peak_memory_bytes"].is_number())
        std::snprintf(peak, sizeof peak, " %10.0f", number(r, "peak_memory_bytes") / (1024.0 * 1024.0));
      else
        std::snprintf(peak, sizeof peak, " %10s", "-");
    }
    std::snprintf(line, sizeof line, "  %-32s %8lld %10.3f %10.3f %10.3f %16s%s\n", r.value("name", std::string("?")).c_str(),
                  static_cast<long long>(number(r, "iterations")), number(r, "median_ms"), number(r, "p10_ms"),
                  number(r, "p90_ms"), throughput, peak);
    out += line;
  }
  // Figures the algorithm derives from the rows (efficiency against a measured peak, ...).
  if (summary_result.contains("notes") && summary_result["notes"].is_array())
    for (const json& note : summary_result["notes"])
      if (note.is_string()) out += "  " + note.get<std::string>() + "\n";
  return out;
}

}  // namespace mlhost
