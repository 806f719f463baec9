// The algorithm's side of calibration (see calibration.hpp).
#include <mlh/runtime/calibration.hpp>

#include <algorithm>
#include <cmath>

#include <mlh/plan_reader.hpp>
#include <mlh/runtime/benchmark.hpp>

namespace mlh::rt {

CalibrationRequest CalibrationRequest::parse(const std::string& plan_json) {
  const PlanReader plan(plan_json);
  CalibrationRequest request;
  if (auto seconds = plan.number("calibration.seconds", [](double s) { return s > 0 && s <= 600; },
                                 "a number of seconds in (0, 600]"))
    request.seconds = *seconds;
  if (auto precision = plan.one_of("calibration.check_precision", {"fp16", "bf16"}))
    request.check_precision = parse_precision(*precision);
  if (const PlanReader::json* search = plan.find("calibration.batch_search")) {
    if (!search->is_object()) PlanReader::fail("calibration.batch_search", "an object", *search);
    request.batch_search = true;
  }
  return request;
}

nlohmann::json time_calibration_step(const std::string& name, const std::function<void()>& step,
                                     double items_per_step, const std::string& unit, c10::Device device,
                                     const CalibrationRequest& request) {
  BenchmarkOptions options;
  options.warmup_iterations = 2;
  options.min_iterations = 3;
  options.min_seconds = request.seconds;
  options.items_per_iteration = items_per_step;
  options.unit = unit;
  options.device = device;
  const BenchmarkResult r = run_benchmark(name, step, options);
  return {{"benchmark", name},
          {"throughput", r.throughput},
          {"unit", unit},
          {"median_ms", r.median_ms},
          {"iterations", r.iterations}};
}

nlohmann::json precision_check(Precision reduced, double fp32_loss, double reduced_loss, double relative_tolerance,
                               int64_t steps) {
  const double scale = std::max(std::abs(fp32_loss), 1e-3);
  const bool passed = std::isfinite(fp32_loss) && std::isfinite(reduced_loss) &&
                      std::abs(reduced_loss - fp32_loss) <= relative_tolerance * scale;
  return {{"precision", to_string(reduced)}, {"steps", steps},   {"fp32_loss", fp32_loss},
          {"reduced_loss", reduced_loss},   {"tolerance", relative_tolerance}, {"passed", passed}};
}

}  // namespace mlh::rt
