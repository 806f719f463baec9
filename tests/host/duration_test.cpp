// The run's expected duration (plan/duration.hpp): the declared work at the calibration's
// figure for the chosen settings, capped by the config's time limit; without a figure in the
// work's unit, the work alone, said as not known before training.
#include "plan/duration.hpp"

#include <gtest/gtest.h>

namespace mlhost {
namespace {

using nlohmann::json;

json description(double amount, double max_seconds = 0) {
  json work{{"amount", amount}, {"unit", "env_steps"}, {"shorten", "total_timesteps"}};
  if (max_seconds > 0) work["max_seconds"] = max_seconds;
  return json{{"work", work}};
}

json calibration(const std::string& unit) {
  return json{{"unit", unit},
              {"chosen", {{"threads", 2}}},
              {"measurements",
               json::array({json{{"settings", {{"threads", 1}}}, {"throughput", 500.0}},
                            json{{"settings", {{"threads", 2}}}, {"throughput", 100.0}}})}};
}

TEST(ExpectedDuration, TheWorkAtTheChosenSettingsFigureCappedByTheTimeLimit) {
  const json e = *expected_duration(description(720000), calibration("env_steps"));
  EXPECT_DOUBLE_EQ(e["seconds"].get<double>(), 7200);  // the chosen settings' 100/s, not the faster 500/s
  EXPECT_EQ(expected_duration_text(e),
            "about 2 h 0 min: 720,000 env_steps at 100 env_steps/s (the calibration's figure); total_timesteps or "
            "--max-steps shortens it");
  const json capped = *expected_duration(description(720000, 600), calibration("env_steps"));
  EXPECT_DOUBLE_EQ(capped["seconds"].get<double>(), 600);
  EXPECT_TRUE(capped["capped"].get<bool>());
  EXPECT_NE(expected_duration_text(capped).find("about 10 min: 720,000 env_steps at 100 env_steps/s (the "
                                                "calibration's figure), then its time limit ends it"),
            std::string::npos);
}

TEST(ExpectedDuration, WithoutAFigureInItsUnitTheWorkAloneIsSaid) {
  for (const json& cal : {json(), calibration("episodes")}) {
    const std::optional<json> e = expected_duration(description(720000, 600), cal);
    ASSERT_TRUE(e.has_value()) << cal.dump();
    EXPECT_FALSE(e->contains("seconds"));
    EXPECT_EQ(expected_duration_text(*e),
              "not known before it trains (no calibration has measured this device's speed): 720,000 env_steps, or "
              "its time limit, about 10 min; the progress line gives an ETA once it trains; total_timesteps or "
              "--max-steps shortens it");
  }
  EXPECT_FALSE(expected_duration(json{{"work", nullptr}}, calibration("env_steps")).has_value());
}

}  // namespace
}  // namespace mlhost
