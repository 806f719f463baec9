// The worker's memory allocator as the plan names it (docs/plan.md, "allocator"), turned
// into the environment a device plugin's prepare() returns. The host chooses the allocator
// and finds its library; the worker program is started afresh with this environment, so the
// dynamic loader and the C library read it before the worker's first allocation, and the
// host itself never runs with it.
//
//   {"name": "jemalloc", "library": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
//    "settings": {"conf": "background_thread:true"}}
//       LD_PRELOAD=<library>, MALLOC_CONF=<conf> (jemalloc's options; empty: its defaults)
//   {"name": "tcmalloc", "library": ".../libtcmalloc_minimal.so.4"}     LD_PRELOAD=<library>
//   {"name": "glibc-tuned", "settings": {"mmap_threshold": 33554432, "trim_threshold": ...,
//    "top_pad": ...}}
//       GLIBC_TUNABLES=glibc.malloc.mmap_threshold=N:glibc.malloc.trim_threshold=N:...
//   {"name": "glibc"}, or no "allocator": nothing
//
// What the host's own environment already preloads or tunes stays, after the allocator's.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include <mlh/plan_reader.hpp>
#include <mlh/plugin.hpp>

// The host's own, in its namespace: the SDK's deprecated shims of the same names
// (mlh/thread_env.hpp and others) have other bodies, and a program must not see two.
namespace mlhost {

inline std::vector<mlh::EnvVar> allocator_environment(const mlh::PlanReader& plan,
                                                 const char* existing_preload = std::getenv("LD_PRELOAD"),
                                                 const char* existing_tunables = std::getenv("GLIBC_TUNABLES")) {
  const auto name = plan.setting("allocator.name", mlh::plan_setting("allocator"));
  std::vector<mlh::EnvVar> env;
  if (!name || *name == "glibc") return env;
  if (*name == "glibc-tuned") {
    std::string tunables;
    for (const char* key : {"mmap_threshold", "trim_threshold", "top_pad"}) {
      const std::string path = std::string("allocator.settings.") + key;
      const mlh::PlanReader::json* bytes = plan.find(path);
      if (!bytes) continue;
      // Byte counts beyond mlh::PlanReader::integer's int range (a 4 GiB trim threshold).
      if (!bytes->is_number_integer() || (!bytes->is_number_unsigned() && bytes->get<int64_t>() < 0))
        mlh::PlanReader::fail(path, "a byte count >= 0", *bytes);
      tunables += (tunables.empty() ? "" : ":") + std::string("glibc.malloc.") + key + "=" + bytes->dump();
    }
    if (tunables.empty()) return env;
    if (existing_tunables && *existing_tunables) tunables = std::string(existing_tunables) + ":" + tunables;
    env.push_back({"GLIBC_TUNABLES", tunables});
    return env;
  }
  const mlh::PlanReader::json* library = plan.find("allocator.library");
  if (!library || !library->is_string() || library->get<std::string>().empty() || library->get<std::string>()[0] != '/')
    mlh::PlanReader::fail("allocator.library", "the absolute path of the " + *name + " library",
                     library ? *library : mlh::PlanReader::json(nullptr));
  std::string preload = library->get<std::string>();
  if (existing_preload && *existing_preload) preload += ":" + std::string(existing_preload);
  env.push_back({"LD_PRELOAD", preload});
  if (*name == "jemalloc") {
    const mlh::PlanReader::json* conf = plan.find("allocator.settings.conf");
    if (conf && !conf->is_string()) mlh::PlanReader::fail("allocator.settings.conf", "jemalloc's MALLOC_CONF text", *conf);
    if (conf && !conf->get<std::string>().empty()) env.push_back({"MALLOC_CONF", conf->get<std::string>()});
  }
  return env;
}

}  // namespace mlhost

