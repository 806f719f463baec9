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

nlohmann::json held_out_precision_check(Precision reduced, const std::vector<double>& fp32_scores,
                                        const std::vector<double>& reduced_scores, double fp32_loss,
                                        double reduced_loss, int64_t steps) {
  const size_t n = std::min(fp32_scores.size(), reduced_scores.size());
  double fp32_mean = 0, reduced_mean = 0, mean = 0;
  for (size_t i = 0; i < n; ++i) {
    fp32_mean += fp32_scores[i];
    reduced_mean += reduced_scores[i];
    mean += reduced_scores[i] - fp32_scores[i];
  }
  const double count = static_cast<double>(std::max<size_t>(n, 1));
  fp32_mean /= count;
  reduced_mean /= count;
  mean /= count;
  double squares = 0;
  for (size_t i = 0; i < n; ++i) squares += std::pow(reduced_scores[i] - fp32_scores[i] - mean, 2);
  // Fewer than two examples have no interval: nothing shows the precision holds.
  const double half_width = n > 1 ? 1.96 * std::sqrt(squares / static_cast<double>(n - 1)) / std::sqrt(count) : 0;
  const bool passed = n > 1 && std::isfinite(fp32_loss) && std::isfinite(reduced_loss) && mean + half_width >= 0;
  return {{"precision", to_string(reduced)},
          {"steps", steps},
          {"held_out", n},
          {"fp32_loss", fp32_loss},
          {"reduced_loss", reduced_loss},
          {"fp32_accuracy", fp32_mean},
          {"reduced_accuracy", reduced_mean},
          {"difference", mean},
          {"interval", n > 1 ? nlohmann::json{mean - half_width, mean + half_width} : nlohmann::json()},
          {"passed", passed}};
}

}  // namespace mlh::rt
