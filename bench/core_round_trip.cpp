// How far apart two cores are: the time for a cache line to travel from one core to another
// and back, with one thread pinned to each. bench/peer_bench.sh prints it before every run.
//
// On a virtual machine the hypervisor decides which physical cores the virtual CPUs run on,
// and may move them while a program runs. Two threads that share data (a matrix product
// split by rows, then an element-wise kernel reading the rows the other thread wrote) pay for
// the distance: cores that share a last-level cache pass a line in tens of nanoseconds, cores
// on different dies or sockets in hundreds. A benchmark's figure can move with it, and no
// setting inside the machine changes it, so the figure is read together with this one.
//
//   core_round_trip [CPU_A CPU_B]   (default: the first two CPUs this process may run on)
//
// Prints "cpus A,B: N ns round trip (median of 7 runs of 100000)". Exit 0; 2 for a CPU that
// is not a number or not allowed to this process, or with fewer than two CPUs allowed.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr long kTrips = 100000;
constexpr int kRuns = 7;

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// One run: the line goes from a to b and back kTrips times; nanoseconds per round trip.
double one_run(int cpu_a, int cpu_b) {
  alignas(64) static std::atomic<long> line{0};
  line.store(0);
  std::thread other([&] {
    pin_to(cpu_b);
    for (long i = 0; i < kTrips; ++i) {
      while (line.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      line.store(2 * i + 2, std::memory_order_release);
    }
  });
  pin_to(cpu_a);
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < kTrips; ++i) {
    line.store(2 * i + 1, std::memory_order_release);
    while (line.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const auto stop = std::chrono::steady_clock::now();
  other.join();
  return std::chrono::duration<double, std::nano>(stop - start).count() / kTrips;
}

bool parse_cpu(const char* text, int* cpu) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value >= CPU_SETSIZE) return false;
  *cpu = static_cast<int>(value);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    std::fprintf(stderr, "core_round_trip: cannot read this process's CPUs\n");
    return 2;
  }
  std::vector<int> cpus;
  if (argc == 3) {
    for (int i = 1; i < 3; ++i) {
      int cpu = 0;
      if (!parse_cpu(argv[i], &cpu) || !CPU_ISSET(cpu, &allowed)) {
        std::fprintf(stderr, "core_round_trip: CPU '%s' is not one this process may run on\n", argv[i]);
        return 2;
      }
      cpus.push_back(cpu);
    }
  } else if (argc == 1) {
    for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu)
      if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
    if (cpus.size() < 2) {
      std::fprintf(stderr, "core_round_trip: one CPU only: nothing to measure between two\n");
      return 2;
    }
  } else {
    std::fprintf(stderr, "usage: core_round_trip [CPU_A CPU_B]\n");
    return 2;
  }
  std::vector<double> runs;
  for (int r = 0; r < kRuns; ++r) runs.push_back(one_run(cpus[0], cpus[1]));
  std::sort(runs.begin(), runs.end());
  std::printf("cpus %d,%d: %.0f ns round trip (median of %d runs of %ld)\n", cpus[0], cpus[1], runs[kRuns / 2], kRuns,
              kTrips);
  return 0;
}
