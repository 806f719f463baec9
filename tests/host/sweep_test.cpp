// The sweep's spec and results (host/sweep): parsing --sweep and --seeds, the grid's order and
// size, random draws (in range, the same from the same seed), trial folders and --set values,
// the mean and 95% interval over seeds, and the CSV files written from trial folders on disk.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <set>

#include "sweep/sweep_results.hpp"
#include "sweep/sweep_spec.hpp"
#include "temp_dir.hpp"

namespace mlhost {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SweepError& e) {
    return e.what();
  }
  return "";
}

TEST(SweepSpec, ParsesListsAndDistributions) {
  SweepParameter p = parse_sweep_parameter("optimizer.lr=0.1, 0.01,1e-3");
  EXPECT_EQ(p.key, "optimizer.lr");
  EXPECT_EQ(p.values, (std::vector<std::string>{"0.1", "0.01", "1e-3"}));
  p = parse_sweep_parameter(R"(shape=[1,2],[3,4],"a,b")");
  EXPECT_EQ(p.values, (std::vector<std::string>{"[1,2]", "[3,4]", R"("a,b")"})) << "commas in brackets and quotes stay";
  p = parse_sweep_parameter("lr=loguniform(1e-4,1e-1)");
  EXPECT_EQ(p.distribution, "loguniform");
  EXPECT_DOUBLE_EQ(p.low, 1e-4);
  EXPECT_DOUBLE_EQ(p.high, 0.1);
  EXPECT_EQ(parse_sweep_parameter("w=randint(32,256)").distribution, "randint");

  EXPECT_NE(error_of([] { parse_sweep_parameter("lr"); }).find("expected KEY=VALUES"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_parameter("=1,2"); }).find("is not a config key"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_parameter("a..b=1"); }).find("is not a config key"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_parameter("lr=1,1"); }).find("the value '1' twice"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_parameter("lr=[1,2"); }).find("unclosed bracket"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_parameter("lr=uniform(0,x)"); }).find("'x' is not a number"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_parameter("lr=loguniform(0,1)"); }).find("LOW above 0"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_parameter("n=randint(1.5,4)"); }).find("whole numbers"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep_parameter("lr=uniform(0,1"); }).find("closing ')'"), std::string::npos);
}

TEST(SweepSpec, SeedsAreOneToNOrAList) {
  EXPECT_EQ(parse_seeds("3"), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(parse_seeds("0,7,42"), (std::vector<uint64_t>{0, 7, 42}));
  EXPECT_NE(error_of([] { parse_seeds("0"); }).find("must be 1 to"), std::string::npos);
  EXPECT_NE(error_of([] { parse_seeds("-2"); }).find("not a whole number"), std::string::npos);
  EXPECT_NE(error_of([] { parse_seeds("1,1"); }).find("the seed 1 twice"), std::string::npos);
}

TEST(SweepSpec, TheGridVariesTheLastParameterFastestAndEachConfigurationRunsEverySeed) {
  SweepSpec spec;
  spec.parameters = {parse_sweep_parameter("a=1,2"), parse_sweep_parameter("b=x,y,z")};
  spec.seeds = {1, 2};
  const std::vector<SweepTrial> trials = expand_trials(spec);
  ASSERT_EQ(trials.size(), 12u);
  EXPECT_EQ(trials[0].name(), "trial-001");
  EXPECT_EQ(trials[0].sets(), (std::vector<std::string>{"a=1", "b=x", "seed=1"}));
  EXPECT_EQ(trials[1].sets(), (std::vector<std::string>{"a=1", "b=x", "seed=2"}));
  EXPECT_EQ(trials[2].configuration(), "a=1 b=y");
  EXPECT_EQ(trials[11].sets(), (std::vector<std::string>{"a=2", "b=z", "seed=2"}));
  EXPECT_EQ(SweepTrial::from_json(trials[5].to_json()).sets(), trials[5].sets());

  spec.parameters.push_back(parse_sweep_parameter("a=3"));
  EXPECT_NE(error_of([&] { expand_trials(spec); }).find("swept twice"), std::string::npos);
  spec.parameters = {parse_sweep_parameter("lr=uniform(0,1)")};
  EXPECT_NE(error_of([&] { expand_trials(spec); }).find("needs --sweep-random"), std::string::npos);
  spec.parameters = {parse_sweep_parameter("a=1,2,3,4,5,6,7,8,9,10"), parse_sweep_parameter("b=1,2,3,4,5,6,7,8,9,10"),
                     parse_sweep_parameter("c=1,2,3,4,5,6,7,8,9,10"), parse_sweep_parameter("d=1,2,3,4,5,6,7,8,9,10")};
  EXPECT_NE(error_of([&] { expand_trials(spec); }).find("over 10000 trials"), std::string::npos);
}

TEST(SweepSpec, RandomDrawsStayInRangeAndRepeatFromTheSameSeed) {
  SweepSpec spec;
  spec.parameters = {parse_sweep_parameter("lr=loguniform(1e-4,1e-1)"), parse_sweep_parameter("w=randint(2,4)"),
                     parse_sweep_parameter("act=relu,gelu")};
  spec.random_count = 200;
  const std::vector<SweepTrial> trials = expand_trials(spec, 7);
  ASSERT_EQ(trials.size(), 200u);
  std::set<std::string> widths, acts;
  int below_1e3 = 0;
  for (const SweepTrial& t : trials) {
    const double lr = std::stod(t.values[0].second);
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1e-1);
    below_1e3 += lr < 1e-3;
    widths.insert(t.values[1].second);
    acts.insert(t.values[2].second);
    EXPECT_FALSE(t.seed);
  }
  EXPECT_EQ(widths, (std::set<std::string>{"2", "3", "4"})) << "randint includes both ends";
  EXPECT_EQ(acts, (std::set<std::string>{"relu", "gelu"}));
  // Log-uniform: a third of the draws in each decade (binomial: 67 +- 20 at 3 sigma).
  EXPECT_GT(below_1e3, 46);
  EXPECT_LT(below_1e3, 88);
  EXPECT_EQ(expand_trials(spec, 7)[13].sets(), trials[13].sets());
  EXPECT_NE(expand_trials(spec, 8)[13].sets(), trials[13].sets());
}

TEST(SweepResults, MeanAndIntervalFollowStudentsT) {
  const MeanInterval one = mean_and_interval({4.0});
  EXPECT_EQ(one.mean, 4.0);
  EXPECT_FALSE(one.half_width);
  const MeanInterval three = mean_and_interval({1.0, 2.0, 3.0});  // sd 1, t(0.975, 2) = 4.303
  EXPECT_DOUBLE_EQ(three.mean, 2.0);
  EXPECT_NEAR(*three.half_width, 4.303 / std::sqrt(3.0), 1e-9);
  std::vector<double> many(61);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i % 2);  // t(0.975, 60) = 2.000
  const MeanInterval m = mean_and_interval(many);
  double sd = 0;
  for (double v : many) sd += (v - m.mean) * (v - m.mean);
  sd = std::sqrt(sd / 60);
  EXPECT_NEAR(*m.half_width, 2.000 * sd / std::sqrt(61.0), 2e-3 * *m.half_width);
}

TEST(SweepResults, TablesComeFromTheTrialFolders) {
  TempDir dir("mlhost-sweep-");
  SweepSpec spec;
  spec.parameters = {parse_sweep_parameter("lr=0.1,0.2")};
  spec.seeds = {1, 2};
  const std::vector<SweepTrial> trials = expand_trials(spec);
  const double loss[] = {1.0, 3.0, 0.5};  // trial-004 never ran
  for (size_t i = 0; i < 3; ++i) {
    std::filesystem::create_directories(dir.path() / trials[i].name());
    std::ofstream(dir.path() / trials[i].name() / "summary.json")
        << nlohmann::json{{"status", "completed"}, {"elapsed_seconds", 2.5},
                          {"last_metrics", {{"train/loss", loss[i]}, {"val/acc", 0.5 + 0.1 * static_cast<double>(i)}}}}
               .dump();
  }
  std::vector<TrialOutcome> outcomes;
  for (const auto& t : trials) outcomes.push_back(read_trial_outcome(dir.path(), t));
  EXPECT_EQ(outcomes[3].status, "not run");
  write_sweep_csv(dir.path(), {"lr"}, outcomes);

  std::ifstream trials_csv(dir.path() / "trials.csv");
  std::string header, row;
  std::getline(trials_csv, header);
  EXPECT_EQ(header, "trial,lr,seed,status,seconds,train/loss,val/acc");
  std::getline(trials_csv, row);
  EXPECT_EQ(row, "trial-001,0.1,1,completed,2.5,1,0.5");
  for (int i = 0; i < 3; ++i) std::getline(trials_csv, row);
  EXPECT_EQ(row, "trial-004,0.2,2,not run,,,");

  std::ifstream summary_csv(dir.path() / "summary.csv");
  std::getline(summary_csv, header);
  EXPECT_EQ(header, "lr,trials,completed,train/loss mean,train/loss ci95,val/acc mean,val/acc ci95");
  std::getline(summary_csv, row);
  EXPECT_EQ(row, "0.1,2,2,2,12.706,0.55,0.6353");  // (1 + 3) / 2; 12.706 * sd(1, 3) / sqrt(2)
  std::getline(summary_csv, row);
  EXPECT_EQ(row, "0.2,2,1,0.5,,0.7,") << "one completed seed: a mean, no interval";

  const std::string table = sweep_table_text({"lr"}, outcomes);
  EXPECT_NE(table.find("lr   seeds done  val/acc        train/loss\n"), std::string::npos) << table;
  EXPECT_NE(table.find("0.1  2/2         0.55 ± 0.6353  2 ± 12.706\n"), std::string::npos) << table;
  EXPECT_NE(table.find("0.2  1/2         0.7            0.5\n"), std::string::npos) << table;
}

}  // namespace
}  // namespace mlhost
