// What this process did with the host's plan (docs/plan.md, "What each field does"), seen
// from inside the worker. The parts of the runtime that apply a plan field count what they
// do as they do it (batches copied from pinned memory, batches made by data workers, device
// caches released, activations recomputed, autocast regions entered, tensors converted to
// channels-last); the report adds the process-wide settings as LibTorch has them now
// (threads, backend switches, the CPU memory cap, the OpenMP environment).
//
// Once apply_plan() ran, every summary the plugin sends (RunContext::summary) carries the
// report as "plan_applied", so summary.json shows which plan values took effect:
//
//   "plan_applied": {"threads": {"intra_op": 2, "inter_op": 1},
//                    "pinned_memory": {"pinned_copies": 0, "pageable_copies": 412}, ...}
#pragma once

#include <cstdint>
#include <string>

namespace mlh::rt {

// Adds `n` to the counter `key` of plan field `field` (thread-safe; cheap enough per batch).
void count_plan_effect(const char* field, const char* key, int64_t n = 1);

// Records a value of plan field `field` as applied (the last one recorded wins).
void note_plan_effect(const char* field, const char* key, int64_t value);
void note_plan_effect(const char* field, const char* key, double value);
void note_plan_effect(const char* field, const char* key, const std::string& value);

// The report as a JSON object's text: the counters and values recorded so far, and the
// process-wide settings read back from LibTorch and the environment.
std::string plan_effects_report_json();

// Forgets the counters and values (tests that compare two pieces of work in one process).
void reset_plan_effects();

// Makes every summary this plugin sends carry the report (apply_plan calls it).
void report_plan_effects_in_summaries();

}  // namespace mlh::rt
