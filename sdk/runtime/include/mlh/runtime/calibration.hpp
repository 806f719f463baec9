// An algorithm's "calibrate" command: what the host's calibration (docs/plan.md,
// "Calibration") measures in each candidate setting. The host starts a fresh worker per
// candidate (allocator, intra-op threads, precision), with plan["calibration"] =
//   {"seconds": 2.0, "check_precision": "bf16"}          (check_precision only when asked)
// and the algorithm replies with its run summary:
//   {"calibration": {"benchmark": "train_step", "throughput": 16.2, "unit": "episodes",
//                    "median_ms": 61.7, "iterations": 33},
//    "precision_check": {"precision": "bf16", "steps": 30, "fp32_loss": 2.31,
//                        "reduced_loss": 2.33, "tolerance": 0.05, "passed": true}}
// An algorithm offers a reduced precision only where it runs the check: without a
// "precision_check" in the reply, the host keeps fp32. Where the algorithm has held-out data
// with a per-example score (ProtoNet's validation episodes), held_out_precision_check judges
// by it; else precision_check compares the training losses.
//
// For the batch size finder (`host --batch-size auto`, batch_finder.hpp) the plan says
//   {"batch_search": {"start": 32, "max": 4096, "seconds": 60}}
// instead, and an algorithm whose batch may change replies {"batch_search": <result>}.
//
//   const auto request = mlh::rt::CalibrationRequest::parse(ctx.plan_json());
//   json reply = {{"calibration", mlh::rt::time_calibration_step("train_step", step, batch, "samples",
//                                                               plan.device, request)}};
//   if (request.check_precision) reply["precision_check"] = mlh::rt::precision_check(
//       *request.check_precision, loss_after(kFp32), loss_after(*request.check_precision), 0.05, steps);
//   ctx.summary(reply.dump());
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <mlh/runtime/precision.hpp>

namespace mlh::rt {

struct CalibrationRequest {
  double seconds = 2.0;                       // how long to time the step (after a warm-up)
  std::optional<Precision> check_precision;   // run the quality check for this precision
  bool batch_search = false;                  // find the batch size instead (batch_finder.hpp)

  // From the plan's "calibration" object; defaults when there is none. A bad value is an
  // mlh::Error naming the field.
  static CalibrationRequest parse(const std::string& plan_json);
};

// Times `step` (two warm-up calls, then at least three timed ones and about
// request.seconds) and returns the "calibration" object of the reply.
nlohmann::json time_calibration_step(const std::string& name, const std::function<void()>& step,
                                     double items_per_step, const std::string& unit, c10::Device device,
                                     const CalibrationRequest& request);

// The "precision_check" object: training the same steps from the same start in fp32 and
// in `reduced` ended at these losses; it passes when the reduced-precision loss is finite
// and within `relative_tolerance` of fp32's (relative to fp32's magnitude, at least 1e-3).
nlohmann::json precision_check(Precision reduced, double fp32_loss, double reduced_loss, double relative_tolerance,
                               int64_t steps);

// The "precision_check" object of a check on held-out data: two models trained the same
// `steps` from the same start, one in fp32 and one in `reduced`, each scored on the same
// held-out examples (`fp32_scores[i]` and `reduced_scores[i]`: example i's accuracy, say).
// The paired differences give the mean difference (reduced - fp32) and its 95% interval
// (mean +- 1.96 standard errors). It passes when both held-out losses are finite and the
// reduced precision is not worse beyond that interval (its upper end is not below zero): a
// precision is refused only where the held-out examples show it worse than their own noise.
// Fields: precision, steps, held_out, fp32_loss, reduced_loss, fp32_accuracy,
// reduced_accuracy, difference, interval [low, high], passed.
nlohmann::json held_out_precision_check(Precision reduced, const std::vector<double>& fp32_scores,
                                        const std::vector<double>& reduced_scores, double fp32_loss,
                                        double reduced_loss, int64_t steps);

}  // namespace mlh::rt
