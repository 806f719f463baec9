// NumPy .npy files: a memory-mapped reader and an atomic writer. TRM's datasets (the
// reference's build_*_dataset.py output) are folders of .npy arrays; a Sudoku-Extreme split
// holds ~80 M tokens, so the reader maps the file instead of reading it, and validates the
// header against the file size before touching any data (the file is untrusted input).
// Formats 1.0, 2.0 and 3.0; little-, big- (byteswapped on access) and native-endian descrs;
// C order, or Fortran order for 0-d and 1-d arrays (the same layout). Errors are
// mlh::DataError naming the path and what is wrong (MLH_ERR_IO only where mapping the file
// into memory fails).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trm {

enum class DType { kBool, kInt8, kUInt8, kInt16, kUInt16, kInt32, kUInt32, kInt64, kUInt64, kFloat16, kFloat32, kFloat64 };

// The numpy descr of a little-endian array of this type: "|b1", "|u1", "<i4", "<f2", ...
std::string to_string(DType);
// Bytes per element.
size_t item_size(DType);
// Floating-point types (as_int64 and copy_int32 refuse them).
bool is_float(DType);

class NpyArray {
 public:
  // Maps `path` read-only and parses its header.
  static NpyArray open(const std::string& path);

  NpyArray() = default;
  ~NpyArray();
  NpyArray(NpyArray&& other) noexcept;
  NpyArray& operator=(NpyArray&& other) noexcept;
  NpyArray(const NpyArray&) = delete;
  NpyArray& operator=(const NpyArray&) = delete;

  const std::string& path() const { return path_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size() const { return size_; }  // number of elements (1 for a 0-d array)
  bool big_endian() const { return swap_; }
  int major_version() const { return major_; }

  // Element `flat_index` (C order) of an integer or bool array; float arrays throw.
  int64_t as_int64(int64_t flat_index) const;
  // Element `flat_index` of any array (float16 converted exactly).
  double as_double(int64_t flat_index) const;
  // Elements [first, first + count) of an integer or bool array as int32; a range outside
  // the array or a value outside int32 throws.
  void copy_int32(int64_t first, int64_t count, int32_t* out) const;
  // Smallest and largest of elements [first, first + count) of an integer or bool array
  // (count >= 1). One pass, vectorisable: what dataset validation uses on ~80 M tokens.
  void min_max(int64_t first, int64_t count, int64_t& lo, int64_t& hi) const;
  // The raw element bytes (possibly big-endian, possibly unaligned); nullptr when empty.
  const void* data() const { return data_; }

 private:
  void check_range(int64_t first, int64_t count, const char* what) const;
  void check_integer(const char* what) const;
  void release();

  std::string path_;
  DType dtype_ = DType::kUInt8;
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  bool swap_ = false;
  int major_ = 1;
  void* map_ = nullptr;
  size_t map_len_ = 0;
  const unsigned char* data_ = nullptr;
};

// Writes a C-order little-endian array (`data` holds size * item_size(dtype) bytes, in
// native = little-endian order) as format 1.0 with the header padded to 64 bytes as numpy
// does (2.0 when the header would not fit 1.0's 16-bit length). Written to a temporary file
// in the same folder and renamed over `path`, so readers never see a partial file.
void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape, const void* data);
// The bytes write_npy puts before the data (magic, version, header length, padded header),
// for writers that stream the data themselves; `path` only names the file in errors.
std::string npy_file_header(const std::string& path, DType dtype, const std::vector<int64_t>& shape);

}  // namespace trm
