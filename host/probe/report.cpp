#include "probe/report.hpp"

#include "probe/backends.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <sstream>

#include <mlh/mlh_abi.h>

namespace mlhost {

using nlohmann::json;

namespace {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  return buf;
}

// The processor's name: the built-in cpu plugin's CPU device, else the first CPU-class device
// another plugin reports (a third-party CPU plugin loaded alone).
std::string processor_name(const std::vector<PluginProbe>& plugins) {
  const Device* first_cpu = nullptr;
  for (const auto& p : plugins)
    for (const auto& d : p.devices) {
      if (d.device_class != MLH_DEVICE_CLASS_CPU) continue;
      if (p.name == "cpu") return d.name;
      if (!first_cpu) first_cpu = &d;
    }
  return first_cpu ? first_cpu->name : "";
}

// "CUDA (NVIDIA GPU): available - NVIDIA A100-SXM4-40GB, compute capability 8.0, 40.0 GiB"
// or "MPS (Apple GPU): not available - MPS needs macOS 12.3+ on Apple Silicon".
std::string device_headline(const Device& d) {
  std::string kind = d.kind;
  for (char& c : kind) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string what = d.is_gpu() ? "GPU" : d.device_class == MLH_DEVICE_CLASS_CPU ? "CPU" : "device";
  std::string line = kind + " (" + (d.vendor.empty() ? "" : d.vendor + " ") + what + "): ";
  if (!d.available) return line + "not available - " + d.unavailable_reason;
  line += "available - " + d.name;
  if (d.capability_major != MLH_UNKNOWN)
    line += ", compute capability " + std::to_string(d.capability_major) + "." + std::to_string(d.capability_minor);
  return line + ", " + format_bytes(d.memory_total_bytes);
}

}  // namespace

ProbeReport probe_and_rank(const Discovery& discovery, const std::vector<PluginManifest>& algorithms,
                           const DeviceRequest& request, bool no_gpu, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  ProbeReport report;
  report.platform = read_platform_info();
  report.discovery = discovery;
  report.plugins = probe_device_plugins(report.discovery, timeout);
  require_torch_backends(report.plugins, algorithms);
  report.request = request;
  report.no_gpu = no_gpu;
  report.ranking = rank_devices(all_devices(report.plugins), request, no_gpu);
  // A requested device that no record matches may belong to a plugin that could not report
  // any: say so, as --probe does, rather than that no such device exists.
  if (!report.ranking.chosen_device() && !request.is_auto())
    for (const PluginProbe& p : report.plugins)
      if (p.name == request.kind && p.status != PluginProbe::Status::kOk && !p.reason.empty())
        report.ranking.error += "; the " + p.name + " plugin " + probe_status_name(p.status) + ": " + p.reason;
  report.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return report;
}

PlatformInfo read_platform_info() {
  PlatformInfo info;
  struct utsname u {};
  if (uname(&u) == 0) {
    info.os = u.sysname;
    info.kernel = u.release;
    info.arch = u.machine;
  }
  info.cpu_threads_online = sysconf(_SC_NPROCESSORS_ONLN);
  return info;
}

json probe_report_to_json(const ProbeReport& r) {
  json search = json::array();
  for (const auto& d : r.discovery.search_path) search.push_back({{"path", d.path.string()}, {"origin", d.origin}});
  json problems = json::array();
  for (const auto& p : r.discovery.problems) problems.push_back({{"path", p.path.string()}, {"reason", p.reason}});

  json plugins = json::array();
  for (const auto& p : r.plugins) {
    json ids = json::array();
    for (const auto& d : p.devices) ids.push_back(d.id());
    plugins.push_back({{"name", p.name},
                       {"version", p.version.empty() ? json(nullptr) : json(p.version)},
                       {"status", probe_status_name(p.status)},
                       {"reason", p.reason.empty() ? json(nullptr) : json(p.reason)},
                       {"abi", p.abi.empty() ? json(nullptr) : json(p.abi)},
                       {"library", p.library.empty() ? json(nullptr) : json(p.library)},
                       {"origin", p.origin.empty() ? json(nullptr) : json(p.origin)},
                       {"elapsed_ms", p.elapsed_ms},
                       {"warnings", p.warnings},
                       {"devices", ids}});
  }
  json devices = json::array();
  for (const auto& rd : r.ranking.devices) {
    json d = device_to_json(rd.device);
    d["rank"] = rd.position > 0 ? json(rd.position) : json(nullptr);
    d["chosen"] = rd.chosen;
    d["reason"] = rd.reason;
    devices.push_back(d);
  }
  const std::string processor = processor_name(r.plugins);
  return {{"schema_version", 1},
          {"host", {{"name", "mlhost"}, {"version", MLHOST_VERSION},
                    {"abi", std::to_string(MLH_ABI_VERSION_MAJOR) + "." + std::to_string(MLH_ABI_VERSION_MINOR)}}},
          {"platform", {{"os", r.platform.os}, {"kernel", r.platform.kernel}, {"arch", r.platform.arch},
                        {"processor", processor.empty() ? json(nullptr) : json(processor)},
                        {"cpu_threads_online", r.platform.cpu_threads_online}}},
          {"request", {{"device", r.request.str()}, {"no_gpu", r.no_gpu}}},
          {"search_path", search},
          {"problems", problems},
          {"plugins", plugins},
          {"devices", devices},
          {"chosen", r.ranking.chosen_device() ? json(r.ranking.chosen_device()->id()) : json(nullptr)},
          {"error", r.ranking.error.empty() ? json(nullptr) : json(r.ranking.error)},
          {"elapsed_ms", r.elapsed_ms}};
}

std::string probe_report_to_text(const ProbeReport& r) {
  std::ostringstream o;
  const std::string processor = processor_name(r.plugins);
  o << "mlhost " << MLHOST_VERSION << " probe\n";
  o << "  platform   " << r.platform.os << " " << r.platform.kernel << " " << r.platform.arch << "\n";
  o << "  processor  " << (processor.empty() ? "unknown (no CPU device was reported)" : processor) << "\n";
  o << "  cpu threads " << r.platform.cpu_threads_online << " online\n";
  o << "  plugin path";
  for (const auto& d : r.discovery.search_path) o << " " << d.path.string() << " (" << d.origin << ")";
  o << "\n\nDevice plugins\n";
  for (const auto& p : r.plugins) {
    o << "  " << p.name << (p.version.empty() ? "" : " " + p.version) << "  " << probe_status_name(p.status);
    if (p.status == PluginProbe::Status::kOk)
      o << "  (" << p.devices.size() << " device" << (p.devices.size() == 1 ? "" : "s") << ", ABI " << p.abi << ", "
        << ms_text(p.elapsed_ms) << ")";
    o << "\n";
    if (!p.reason.empty()) o << "      " << p.reason << "\n";
    for (const auto& w : p.warnings) o << "      warning: " << w << "\n";
    for (const auto& d : p.devices) {
      o << "    " << d.id() << "  " << device_headline(d) << "\n";
      if (!d.available) continue;  // its figures would be placeholders
      o << "        class " << device_class_name(d.device_class) << ", torch device '" << d.torch_device << "'";
      if (d.compute_units != MLH_UNKNOWN) o << ", " << d.compute_units << " compute units";
      if (d.logical_units != MLH_UNKNOWN) o << " / " << d.logical_units << " logical";
      o << "\n        memory " << format_bytes(d.memory_total_bytes) << " total, " << format_bytes(d.memory_free_bytes)
        << " free" << (d.memory_unified ? " (shared with the host)" : "") << "\n";
      o << "        precisions " << join(precision_names(d.precisions), " ");
      if (d.fast_precisions) o << " (fast: " << join(precision_names(d.fast_precisions), " ") << ")";
      if (d.recommended_threads != MLH_UNKNOWN) o << ", recommended threads " << d.recommended_threads;
      o << "\n";
      if (!d.features.empty()) o << "        features " << join(d.feature_list(), " ") << "\n";
      if (d.limitations) o << "        limitations " << join(limitation_names(d.limitations), " ") << "\n";
    }
  }
  for (const auto& p : r.discovery.problems) o << "  (unreadable) " << p.path.string() << "\n      " << p.reason << "\n";

  o << "\nRanking (device " << r.request.str() << (r.no_gpu ? ", --no-gpu" : "") << ")\n";
  for (const auto& rd : r.ranking.devices) {
    o << "  " << (rd.position > 0 ? std::to_string(rd.position) + "." : " -") << " " << rd.device.id() << "  "
      << rd.device.name << (rd.chosen ? "  <- chosen" : "") << "\n      " << rd.reason << "\n";
  }
  if (const Device* d = r.ranking.chosen_device())
    o << "\nChosen: " << d->id() << " (" << d->name << "), torch device '" << d->torch_device << "'\n";
  else
    o << "\nChosen: none: " << r.ranking.error << "\n";
  return o.str();
}

json plugin_list_to_json(const Discovery& discovery) {
  json plugins = json::array();
  for (const auto& p : discovery.plugins) {
    json j = manifest_to_json(p.manifest);
    j["origin"] = p.origin;
    j["loadable"] = p.usable();
    j["refused"] = p.refused ? json(*p.refused) : json(nullptr);
    j["warnings"] = p.warnings;
    j["sha256"] = p.sha256 ? json(*p.sha256) : json(nullptr);  // only with an allow-list
    plugins.push_back(j);
  }
  json search = json::array();
  for (const auto& d : discovery.search_path) search.push_back({{"path", d.path.string()}, {"origin", d.origin}});
  json problems = json::array();
  for (const auto& p : discovery.problems) problems.push_back({{"path", p.path.string()}, {"reason", p.reason}});
  return {{"schema_version", 1}, {"search_path", search}, {"plugins", plugins}, {"problems", problems}};
}

std::string plugin_list_to_text(const Discovery& discovery) {
  std::ostringstream o;
  o << "Plugin search path\n";
  for (const auto& d : discovery.search_path) o << "  " << d.path.string() << " (" << d.origin << ")\n";
  for (const char* kind : {"device", "algorithm"}) {
    o << "\n" << (std::string(kind) == "device" ? "Device" : "Algorithm") << " plugins\n";
    bool any = false;
    for (const auto& p : discovery.plugins) {
      if (p.manifest.kind != kind) continue;
      any = true;
      const auto& m = p.manifest;
      o << "  " << m.name << " " << m.version << "  ABI " << m.abi_major << "." << m.abi_minor << "  "
        << (p.usable() ? "ok" : "refused") << "\n      " << m.library_path.string() << "\n";
      if (!m.description.empty()) o << "      " << m.description << "\n";
      if (m.torch_version) o << "      LibTorch " << *m.torch_version << " for " << torch_backend_list(m) << "\n";
      if (p.sha256) o << "      sha256 " << *p.sha256 << "\n";
      if (p.refused) o << "      refused: " << *p.refused << "\n";
      for (const auto& w : p.warnings) o << "      warning: " << w << "\n";
    }
    if (!any) o << "  (none)\n";
  }
  if (!discovery.problems.empty()) {
    o << "\nProblems\n";
    for (const auto& p : discovery.problems) o << "  " << p.path.string() << "\n      " << p.reason << "\n";
  }
  return o.str();
}

}  // namespace mlhost
