// LibTorch's CPU allocator, capped (see memory_limit.hpp).
#include <mlh/runtime/memory_limit.hpp>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <mlh/runtime/compat.hpp>

namespace mlh::rt {
namespace {

// Counts what the wrapped allocator (LibTorch's default CPU allocator) hands out and refuses
// what would pass the limit. Each allocation's context is remembered with its size and the
// wrapped allocator's deleter, so a free through our deleter (or through raw_deleter(), for
// raw_allocate) gives both back.
class CpuMemoryCap {
 public:
  explicit CpuMemoryCap(c10::Allocator* inner) : inner_(inner) {}

  void set_limit(std::optional<int64_t> bytes) { limit_.store(bytes ? *bytes : -1); }
  std::optional<int64_t> limit() const {
    const int64_t l = limit_.load();
    return l < 0 ? std::nullopt : std::optional<int64_t>(l);
  }
  int64_t in_use() const { return in_use_.load(); }
  int64_t peak() const { return peak_.load(); }
  void reset_peak() { peak_.store(in_use_.load()); }

  c10::DataPtr allocate(size_t n) {
    const auto bytes = static_cast<int64_t>(n);
    const int64_t limit = limit_.load();
    const int64_t before = in_use_.fetch_add(bytes);
    if (limit >= 0 && before + bytes > limit) {
      in_use_.fetch_sub(bytes);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", format_gib(bytes), " with ",
                       format_gib(before), " of the plan's ", format_gib(limit), " CPU tensor memory limit in use");
    }
    int64_t peak = peak_.load();
    while (before + bytes > peak && !peak_.compare_exchange_weak(peak, before + bytes)) {
    }
    c10::DataPtr inner;
    try {
      inner = inner_->allocate(n);
    } catch (...) {
      in_use_.fetch_sub(bytes);
      throw;
    }
    void* data = inner.get();
    void* context = inner.get_context();
    const c10::DeleterFnPtr deleter = inner.get_deleter();
    const c10::Device device = inner.device();
    if (!context) {  // nothing to free later (n == 0)
      in_use_.fetch_sub(bytes);
      return inner;
    }
    inner.release_context();
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_[context] = {bytes, deleter};
    }
    return c10::DataPtr(data, context, &CpuMemoryCap::free, device);
  }

  static void free(void* context);
  static CpuMemoryCap& instance();

 private:
  struct Live {
    int64_t bytes;
    c10::DeleterFnPtr deleter;
  };

  c10::Allocator* inner_;
  std::atomic<int64_t> limit_{-1}, in_use_{0}, peak_{0};
  std::mutex mu_;
  std::unordered_map<void*, Live> live_;
};

void CpuMemoryCap::free(void* context) {
  CpuMemoryCap& self = instance();
  Live live{0, nullptr};
  {
    std::lock_guard<std::mutex> lock(self.mu_);
    auto it = self.live_.find(context);
    if (it != self.live_.end()) {
      live = it->second;
      self.live_.erase(it);
    }
  }
  self.in_use_.fetch_sub(live.bytes);
  if (live.deleter) live.deleter(context);
}

CpuMemoryCap& CpuMemoryCap::instance() {
  // Made once and never destroyed: tensors may be freed during static destruction.
  static CpuMemoryCap* cap = new CpuMemoryCap(c10::GetCPUAllocator());
  return *cap;
}

// The c10::Allocator in front of it: 1.13's allocate() is const and it has no copy_data();
// 2.x's allocate() is not const and copy_data() is pure virtual (compat.hpp tells which).
template <bool ConstAllocate, class Base = c10::Allocator>
class CappedAllocator;

template <class Base>
class CappedAllocator<true, Base> final : public Base {
 public:
  c10::DataPtr allocate(size_t n) const override { return CpuMemoryCap::instance().allocate(n); }
  c10::DeleterFnPtr raw_deleter() const override { return &CpuMemoryCap::free; }
};

template <class Base>
class CappedAllocator<false, Base> final : public Base {
 public:
  c10::DataPtr allocate(size_t n) override { return CpuMemoryCap::instance().allocate(n); }
  c10::DeleterFnPtr raw_deleter() const override { return &CpuMemoryCap::free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    this->default_copy_data(dest, src, count);
  }
};

std::once_flag installed;

}  // namespace

void set_cpu_memory_limit(std::optional<int64_t> bytes) {
  CpuMemoryCap::instance().set_limit(bytes);
  // Installed on first use, above the default's priority; from then on it counts everything,
  // and a limit of none only stops it refusing.
  std::call_once(installed, [] {
    static auto* allocator = new CappedAllocator<compat::kAllocatorAllocateIsConst>();
    c10::SetCPUAllocator(allocator, /*priority=*/100);
  });
}

std::optional<int64_t> cpu_memory_limit() { return CpuMemoryCap::instance().limit(); }
std::string format_gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1LL << 30));
  return buf;
}

int64_t cpu_memory_in_use() { return CpuMemoryCap::instance().in_use(); }
int64_t cpu_memory_peak() { return CpuMemoryCap::instance().peak(); }
void reset_cpu_memory_peak() { CpuMemoryCap::instance().reset_peak(); }

}  // namespace mlh::rt
