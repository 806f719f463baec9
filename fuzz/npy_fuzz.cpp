// .npy files: trm::NpyArray::open (header parsing, size checks against the file, mmap), then
// every element read through as_double and as_int64, and min_max over the whole array.
#include <cstdint>
#include <string>

#include <mlh/plugin.hpp>

#include "data/npy.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = mlhfuzz::temp_dir() + "/input.npy";
  mlhfuzz::write_file(path, data, size);
  try {
    const trm::NpyArray a = trm::NpyArray::open(path);
    // Bounded work per input: the size was checked against the file, so this is at most
    // the file's bytes.
    double sum = 0;
    for (int64_t i = 0; i < a.size(); ++i) {
      sum += a.as_double(i);
      if (!trm::is_float(a.dtype())) {
        try {
          sum += static_cast<double>(a.as_int64(i));
        } catch (const mlh::Error&) {  // a uint64 above int64's range
        }
      }
    }
    if (a.size() > 0 && !trm::is_float(a.dtype())) {
      int64_t lo, hi;
      a.min_max(0, a.size(), lo, hi);
      if (lo > hi) __builtin_trap();
    }
    (void)sum;
  } catch (const mlh::Error&) {
  }
  return 0;
}
