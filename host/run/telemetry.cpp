#include "run/telemetry.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include <nlohmann/json.hpp>

#include "plugins/plugin_loader.hpp"

namespace mlhost {
namespace {

[[noreturn]] void sampler_main(const PluginManifest& manifest, int32_t device_index, pid_t worker,
                               const std::filesystem::path& out, std::chrono::milliseconds interval) {
  const pid_t host = ::getppid();
  try {
    LoadedPlugin plugin = load_plugin(manifest);
    const mlh_device_plugin* table = plugin.device_table();
    if (!table->telemetry) ::_exit(0);
    PluginInstance<mlh_device_plugin> instance(table, manifest.name);
    // The file is made with the first sample: a plugin that has none leaves no empty file,
    // and the host says so after the run.
    int fd = -1;
    const auto start = std::chrono::steady_clock::now();
    // Stop when the worker or the host is gone.
    while (::kill(worker, 0) == 0 && ::getppid() == host) {
      mlh_telemetry_sample s{};
      s.struct_size = sizeof s;
      mlh_error err = make_error();
      const mlh_status status = table->telemetry(instance.get(), device_index, worker, &s, &err);
      if (status == MLH_ERR_UNSUPPORTED) break;
      if (status == MLH_OK) {
        nlohmann::json line = {
            {"time", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()}};
        if (s.valid_fields & MLH_TELEMETRY_UTILIZATION) line["utilization_percent"] = s.utilization_percent;
        if (s.valid_fields & MLH_TELEMETRY_MEMORY_USED) line["memory_used_bytes"] = s.memory_used_bytes;
        if (s.valid_fields & MLH_TELEMETRY_MEMORY_TOTAL) line["memory_total_bytes"] = s.memory_total_bytes;
        if (s.valid_fields & MLH_TELEMETRY_TEMPERATURE) line["temperature_celsius"] = s.temperature_celsius;
        if (s.valid_fields & MLH_TELEMETRY_POWER) line["power_watts"] = s.power_watts;
        const std::string text = line.dump() + "\n";
        if (fd < 0) fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) ::_exit(1);
        if (::write(fd, text.data(), text.size()) < 0) break;  // one write: lines never interleave
      }
      std::this_thread::sleep_for(interval);
    }
    if (fd >= 0) ::close(fd);
  } catch (...) {
    ::_exit(1);
  }
  ::_exit(0);
}

}  // namespace

TelemetrySampler::TelemetrySampler(const PluginManifest& plugin, int32_t device_index, pid_t worker,
                                   const std::filesystem::path& out, std::chrono::milliseconds interval) {
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);  // Ctrl-C at the terminal is for the host, not the sampler
    ::signal(SIGINT, SIG_IGN);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the host
    sampler_main(plugin, device_index, worker, out, interval);
  }
}

TelemetrySampler::~TelemetrySampler() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace mlhost
