// mlh::PlanReader: optional fields, dotted paths, and errors that name the field.
#include <gtest/gtest.h>

#include <set>

#include <mlh/plan_fields.hpp>
#include <mlh/plan_reader.hpp>

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

TEST(PlanReader, MissingAndNullAreNotSet) {
  const mlh::PlanReader plan(R"({"threads": {"intra_op": null}, "memory": null})");
  EXPECT_FALSE(plan.positive_integer("threads.intra_op"));
  EXPECT_FALSE(plan.positive_integer("threads.inter_op"));
  EXPECT_FALSE(plan.boolean("memory.expandable_segments"));
  EXPECT_FALSE(plan.one_of("omp_proc_bind", {"close"}));
}

TEST(PlanReader, ReadsTypedValues) {
  const mlh::PlanReader plan(
      R"({"threads": {"intra_op": 4}, "memory_fraction": 0.5, "pinned": true, "bind": "close", "deep": {"a": {"b": 7}}})");
  EXPECT_EQ(plan.positive_integer("threads.intra_op"), 4);
  EXPECT_EQ(plan.number("memory_fraction", [](double f) { return f > 0 && f <= 1; }, "a fraction"), 0.5);
  EXPECT_EQ(plan.boolean("pinned"), true);
  EXPECT_EQ(plan.one_of("bind", {"close", "spread"}), "close");
  EXPECT_EQ(plan.integer("deep.a.b", 5, "at least 5"), 7);
}

TEST(PlanReader, WrongValuesNameTheField) {
  const mlh::PlanReader plan(R"({"threads": {"intra_op": 4.0, "inter_op": 0}, "t": 8, "f": 2, "b": "yes", "e": "x",
                                 "big": 4294967297})");
  EXPECT_EQ(error_of([&] { plan.positive_integer("threads.intra_op"); }),
            "plan field 'threads.intra_op': expected a positive integer, got 4.0");
  EXPECT_EQ(error_of([&] { plan.positive_integer("threads.inter_op"); }),
            "plan field 'threads.inter_op': expected a positive integer, got 0");
  EXPECT_EQ(error_of([&] { plan.positive_integer("big"); }), "plan field 'big': expected a positive integer, got 4294967297");
  EXPECT_EQ(error_of([&] { plan.positive_integer("t.x"); }), "plan field 't': expected an object, got 8");
  EXPECT_EQ(error_of([&] { plan.number("f", [](double v) { return v <= 1; }, "a number <= 1"); }),
            "plan field 'f': expected a number <= 1, got 2");
  EXPECT_EQ(error_of([&] { plan.boolean("b"); }), "plan field 'b': expected true or false, got \"yes\"");
  EXPECT_EQ(error_of([&] { plan.one_of("e", {"a", "b"}); }), "plan field 'e': expected one of a, b or null, got \"x\"");
}

TEST(PlanReader, APlanMustBeAJsonObject) {
  EXPECT_EQ(error_of([] { mlh::PlanReader("[1]"); }).rfind("plan: expected a JSON object", 0), 0u);
  EXPECT_EQ(error_of([] { mlh::PlanReader("{oops"); }).rfind("plan: not valid JSON", 0), 0u);
}

}  // namespace

// The plan's table of settings (mlh/plan_fields.hpp): in enum order, so plan_field() finds a
// row by its enum; names unique and found by name; the decider as docs/plan.md says.
TEST(PlanFields, TheTableIsInEnumOrderWithUniqueNames) {
  std::set<std::string> names;
  for (size_t i = 0; i < mlh::kPlanFieldCount; ++i) {
    const mlh::PlanFieldInfo& row = mlh::kPlanFields[i];
    EXPECT_EQ(static_cast<size_t>(row.field), i) << row.name;
    EXPECT_TRUE(names.insert(row.name).second) << row.name << " twice";
    EXPECT_EQ(mlh::find_plan_field(row.name), &row);
    EXPECT_STREQ(mlh::plan_field_name(row.field), row.name);
  }
  EXPECT_EQ(mlh::find_plan_field("sources"), nullptr) << "a plan's facts are not settings";
  EXPECT_EQ(mlh::plan_field(mlh::PlanField::kChannelsLast).decider, mlh::PlanFieldDecider::kAlgorithm);
  EXPECT_EQ(mlh::plan_field(mlh::PlanField::kThreads).decider, mlh::PlanFieldDecider::kWorker);
}
