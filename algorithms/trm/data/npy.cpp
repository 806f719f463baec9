#include "npy.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <mlh/atomic_file.hpp>
#include <mlh/plugin.hpp>
#include <utility>

namespace trm {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// A header longer than this is not a numpy header (numpy itself refuses > 10 000 bytes by
// default); the limit keeps the parser's work bounded on hostile input.
constexpr uint64_t kMaxHeaderLen = 1 << 20;
constexpr int kMaxDims = 32;  // numpy's NPY_MAXDIMS

[[noreturn]] void fail(const std::string& path, const std::string& what, mlh_status code = MLH_ERR_INVALID_ARGUMENT) {
  if (code == MLH_ERR_INVALID_ARGUMENT) throw mlh::DataError(".npy file '" + path + "': " + what);
  throw mlh::Error(code, ".npy file '" + path + "': " + what);
}

// A printable excerpt of untrusted text for error messages.
std::string excerpt(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 60)) out += (c >= 32 && c < 127) ? c : '?';
  return s.size() > 60 ? out + "..." : out;
}

// ---- the header dict: a Python literal such as
//      {'descr': '<i4', 'fortran_order': False, 'shape': (3, 81), }
struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  bool has_descr = false, has_fortran = false, has_shape = false;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  Header parse() {
    Header h;
    skip_ws();
    expect('{', "the header is not a dict");
    skip_ws();
    while (peek() != '}') {
      const std::string key = parse_string("a key");
      skip_ws();
      expect(':', "':' after key '" + excerpt(key) + "'");
      skip_ws();
      if (key == "descr") {
        if (h.has_descr) bad("duplicate key 'descr'");
        if (peek() != '\'' && peek() != '"')
          bad("'descr' is not a string (structured and object arrays are not supported)");
        h.descr = parse_string("'descr'");
        h.has_descr = true;
      } else if (key == "fortran_order") {
        if (h.has_fortran) bad("duplicate key 'fortran_order'");
        if (consume_word("True")) h.fortran = true;
        else if (consume_word("False")) h.fortran = false;
        else bad("'fortran_order' is not True or False");
        h.has_fortran = true;
      } else if (key == "shape") {
        if (h.has_shape) bad("duplicate key 'shape'");
        h.shape = parse_shape();
        h.has_shape = true;
      } else {
        bad("unknown key '" + excerpt(key) + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        skip_ws();
      } else if (peek() != '}') {
        bad("expected ',' or '}' after the value of '" + key + "'");
      }
    }
    ++i_;
    skip_ws();
    if (i_ != s_.size()) bad("text after the header dict");
    if (!h.has_descr) bad("the header has no 'descr'");
    if (!h.has_fortran) bad("the header has no 'fortran_order'");
    if (!h.has_shape) bad("the header has no 'shape'");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const { fail(path_, "bad header: " + what); }
  char peek() const {
    if (i_ >= s_.size()) bad("it ends early");
    return s_[i_];
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c, const std::string& what) {
    if (peek() != c) bad("expected " + what);
    ++i_;
  }
  bool consume_word(const char* w) {
    const size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  std::string parse_string(const std::string& what) {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string for " + what);
    ++i_;
    std::string out;
    while (peek() != q) {
      if (s_[i_] == '\\') bad("escapes in strings are not supported");
      out += s_[i_++];
    }
    ++i_;
    return out;
  }
  std::vector<int64_t> parse_shape() {
    expect('(', "'shape' to be a tuple");
    std::vector<int64_t> dims;
    skip_ws();
    while (peek() != ')') {
      if (static_cast<int>(dims.size()) >= kMaxDims) bad("'shape' has more than 32 dimensions");
      if (peek() == '-') bad("'shape' has a negative dimension");
      if (peek() < '0' || peek() > '9') bad("'shape' holds something other than integers");
      int64_t v = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) bad("a dimension of 'shape' overflows");
        v = v * 10 + (s_[i_++] - '0');
      }
      if (consume_word("L")) {}  // Python 2's long suffix, as old numpy wrote it
      dims.push_back(v);
      skip_ws();
      if (peek() == ',') {
        ++i_;
        skip_ws();
      } else if (peek() != ')') {
        bad("expected ',' or ')' in 'shape'");
      }
    }
    ++i_;
    return dims;
  }

  const std::string& s_;
  const std::string& path_;
  size_t i_ = 0;
};

// "<i4" -> (kInt32, swap=false). Anything else numpy writes (complex, object, strings,
// datetimes, structured) is refused.
DType parse_descr(const std::string& descr, const std::string& path, bool& swap) {
  std::string d = descr;
  char order = '=';
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    order = d[0];
    d = d.substr(1);
  }
  static const struct { const char* code; DType type; } kTypes[] = {
      {"b1", DType::kBool},    {"?", DType::kBool},     {"i1", DType::kInt8},     {"u1", DType::kUInt8},
      {"i2", DType::kInt16},   {"u2", DType::kUInt16},  {"i4", DType::kInt32},    {"u4", DType::kUInt32},
      {"i8", DType::kInt64},   {"u8", DType::kUInt64},  {"f2", DType::kFloat16},  {"f4", DType::kFloat32},
      {"f8", DType::kFloat64}};
  for (const auto& t : kTypes) {
    if (d == t.code) {
      // Little-endian hosts only (static_assert below): '>' is the one order to swap.
      swap = order == '>' && item_size(t.type) > 1;
      return t.type;
    }
  }
  fail(path, "unsupported dtype descr '" + excerpt(descr) +
                 "' (supported: b1, i1, u1, i2, u2, i4, u4, i8, u8, f2, f4, f8)");
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .npy reader assumes a little-endian host");

template <typename T>
T load(const unsigned char* p, bool swap) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, p, sizeof(T));
  if (swap)
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

double half_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(static_cast<double>(mant), -24);  // zero and subnormals
  else if (exp == 31) v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

// Calls f(T{}) for the C++ type of an integer or bool dtype.
template <typename F>
void dispatch_integer(DType t, F&& f) {
  switch (t) {
    case DType::kBool:
    case DType::kUInt8: f(uint8_t{}); return;
    case DType::kInt8: f(int8_t{}); return;
    case DType::kInt16: f(int16_t{}); return;
    case DType::kUInt16: f(uint16_t{}); return;
    case DType::kInt32: f(int32_t{}); return;
    case DType::kUInt32: f(uint32_t{}); return;
    case DType::kInt64: f(int64_t{}); return;
    case DType::kUInt64: f(uint64_t{}); return;
    default: return;
  }
}

// A uint64 above int64's range, as int64, would wrap: clamp it so range checks still fail.
template <typename T>
int64_t to_i64(T v) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                         : static_cast<int64_t>(v);
  } else {
    return static_cast<int64_t>(v);
  }
}

}  // namespace

std::string to_string(DType t) {
  switch (t) {
    case DType::kBool: return "|b1";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kInt16: return "<i2";
    case DType::kUInt16: return "<u2";
    case DType::kInt32: return "<i4";
    case DType::kUInt32: return "<u4";
    case DType::kInt64: return "<i8";
    case DType::kUInt64: return "<u8";
    case DType::kFloat16: return "<f2";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
  }
  return "?";
}

size_t item_size(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8: return 1;
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kFloat16: return 2;
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kFloat32: return 4;
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kFloat64: return 8;
  }
  return 1;
}

bool is_float(DType t) { return t == DType::kFloat16 || t == DType::kFloat32 || t == DType::kFloat64; }

NpyArray NpyArray::open(const std::string& path) {
  NpyArray a;
  a.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(path, std::string("cannot stat: ") + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 10) {
    ::close(fd);
    fail(path, "file too short (" + std::to_string(file_size) + " bytes) for a .npy header");
  }
  void* m = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (m == MAP_FAILED) fail(path, std::string("cannot map: ") + std::strerror(map_errno), MLH_ERR_IO);
  a.map_ = m;
  a.map_len_ = file_size;
  const auto* bytes = static_cast<const unsigned char*>(m);

  if (std::memcmp(bytes, kMagic, kMagicLen) != 0) fail(path, "bad magic (not a .npy file)");
  a.major_ = bytes[6];
  uint64_t header_len = 0, header_start = 0;
  if (a.major_ == 1) {
    header_len = uint64_t{bytes[8]} | (uint64_t{bytes[9]} << 8);
    header_start = 10;
  } else if (a.major_ == 2 || a.major_ == 3) {
    if (file_size < 12) fail(path, "file too short for a version " + std::to_string(a.major_) + " header");
    header_len = uint64_t{bytes[8]} | (uint64_t{bytes[9]} << 8) | (uint64_t{bytes[10]} << 16) | (uint64_t{bytes[11]} << 24);
    header_start = 12;
  } else {
    fail(path, "unsupported format version " + std::to_string(a.major_) + "." + std::to_string(bytes[7]));
  }
  if (header_len > kMaxHeaderLen) fail(path, "header length " + std::to_string(header_len) + " is implausibly large");
  if (header_start + header_len > file_size)
    fail(path, "truncated header: it declares " + std::to_string(header_len) + " bytes, the file has " +
                   std::to_string(file_size - header_start) + " after the preamble");
  // Version 3.0 only allows utf-8 in the header; neither version's header needs anything but
  // ASCII for the fields we read, so the bytes are parsed as they are.
  const std::string text(reinterpret_cast<const char*>(bytes + header_start), header_len);
  const Header h = HeaderParser(text, path).parse();
  a.dtype_ = parse_descr(h.descr, path, a.swap_);
  if (h.fortran && h.shape.size() > 1)
    fail(path, "fortran_order True is not supported for " + std::to_string(h.shape.size()) +
                   "-d arrays (save it with numpy.ascontiguousarray)");
  a.shape_ = h.shape;
  const uint64_t data_offset = header_start + header_len;
  const uint64_t avail = file_size - data_offset;
  const uint64_t isz = item_size(a.dtype_);
  // The element count must fit the bytes that are there: checked with overflow guards, so
  // that a shape like (2**62, 2**62) neither wraps nor leads to a huge allocation later.
  uint64_t n = 1;
  bool zero = false;
  for (int64_t d : a.shape_) zero = zero || d == 0;
  if (!zero) {
    for (int64_t d : a.shape_) {
      const uint64_t ud = static_cast<uint64_t>(d);
      if (n > avail / isz / ud)
        fail(path, "data too short: shape " + [&] {
          std::string s = "(";
          for (int64_t x : a.shape_) s += std::to_string(x) + ",";
          return s + ")";
        }() + " of " + to_string(a.dtype_) + " needs more than the " + std::to_string(avail) + " data bytes in the file");
      n *= ud;
    }
  } else {
    n = 0;
  }
  a.size_ = static_cast<int64_t>(n);
  a.data_ = n > 0 ? bytes + data_offset : nullptr;
  return a;
}

NpyArray::~NpyArray() { release(); }

void NpyArray::release() {
  if (map_) ::munmap(map_, map_len_);
  map_ = nullptr;
  map_len_ = 0;
  data_ = nullptr;
}

NpyArray::NpyArray(NpyArray&& o) noexcept { *this = std::move(o); }

NpyArray& NpyArray::operator=(NpyArray&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    dtype_ = o.dtype_;
    shape_ = std::move(o.shape_);
    size_ = o.size_;
    swap_ = o.swap_;
    major_ = o.major_;
    map_ = std::exchange(o.map_, nullptr);
    map_len_ = std::exchange(o.map_len_, 0);
    data_ = std::exchange(o.data_, nullptr);
    o.size_ = 0;
    o.shape_.clear();
  }
  return *this;
}

void NpyArray::check_range(int64_t first, int64_t count, const char* what) const {
  if (first < 0 || count < 0 || first > size_ || count > size_ - first)
    fail(path_, std::string(what) + ": elements [" + std::to_string(first) + ", " + std::to_string(first) + "+" +
                    std::to_string(count) + ") outside the array's " + std::to_string(size_));
}

void NpyArray::check_integer(const char* what) const {
  if (is_float(dtype_)) fail(path_, std::string(what) + ": dtype " + to_string(dtype_) + " is not an integer type");
}

int64_t NpyArray::as_int64(int64_t i) const {
  check_integer("as_int64");
  check_range(i, 1, "as_int64");
  int64_t out = 0;
  const unsigned char* p = data_ + static_cast<size_t>(i) * item_size(dtype_);
  dispatch_integer(dtype_, [&](auto tag) { out = to_i64(load<decltype(tag)>(p, swap_)); });
  if (dtype_ == DType::kUInt64 && out == std::numeric_limits<int64_t>::max() &&
      load<uint64_t>(p, swap_) > static_cast<uint64_t>(out))
    fail(path_, "as_int64: element " + std::to_string(i) + " exceeds the int64 range");
  return out;
}

double NpyArray::as_double(int64_t i) const {
  check_range(i, 1, "as_double");
  const unsigned char* p = data_ + static_cast<size_t>(i) * item_size(dtype_);
  switch (dtype_) {
    case DType::kFloat16: return half_to_double(load<uint16_t>(p, swap_));
    case DType::kFloat32: return load<float>(p, swap_);
    case DType::kFloat64: return load<double>(p, swap_);
    case DType::kUInt64: return static_cast<double>(load<uint64_t>(p, swap_));
    default: {
      double out = 0;
      dispatch_integer(dtype_, [&](auto tag) { out = static_cast<double>(load<decltype(tag)>(p, swap_)); });
      return out;
    }
  }
}

void NpyArray::copy_int32(int64_t first, int64_t count, int32_t* out) const {
  check_integer("copy_int32");
  check_range(first, count, "copy_int32");
  if (count == 0) return;
  const size_t isz = item_size(dtype_);
  const unsigned char* p = data_ + static_cast<size_t>(first) * isz;
  dispatch_integer(dtype_, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t k = 0; k < count; ++k) {
      const T v = load<T>(p + static_cast<size_t>(k) * isz, swap_);
      const int64_t w = to_i64(v);
      if constexpr (sizeof(T) >= 4) {
        if (w < std::numeric_limits<int32_t>::min() || w > std::numeric_limits<int32_t>::max() ||
            (std::is_same_v<T, uint64_t> && static_cast<uint64_t>(v) > static_cast<uint64_t>(w)))
          fail(path_, "element " + std::to_string(first + k) + " = " + std::to_string(v) + " does not fit int32");
      }
      out[k] = static_cast<int32_t>(w);
    }
  });
}

void NpyArray::min_max(int64_t first, int64_t count, int64_t& lo, int64_t& hi) const {
  check_integer("min_max");
  check_range(first, count, "min_max");
  if (count < 1) fail(path_, "min_max of an empty range");
  const size_t isz = item_size(dtype_);
  const unsigned char* p = data_ + static_cast<size_t>(first) * isz;
  dispatch_integer(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T mn = std::numeric_limits<T>::max(), mx = std::numeric_limits<T>::lowest();
    if (!swap_) {
      for (int64_t k = 0; k < count; ++k) {
        T v;
        std::memcpy(&v, p + static_cast<size_t>(k) * sizeof(T), sizeof(T));  // unaligned-safe
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
      }
    } else {
      for (int64_t k = 0; k < count; ++k) {
        const T v = load<T>(p + static_cast<size_t>(k) * sizeof(T), true);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
      }
    }
    lo = to_i64(mn);
    hi = to_i64(mx);
  });
}

std::string npy_file_header(const std::string& path, DType dtype, const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  std::string shape_text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) fail(path, "write_npy: negative dimension " + std::to_string(shape[i]));
    if (shape[i] != 0 && n > (uint64_t{1} << 62) / static_cast<uint64_t>(shape[i]))
      fail(path, "write_npy: the shape's element count overflows");
    n *= static_cast<uint64_t>(shape[i]);
    shape_text += std::to_string(shape[i]) + (shape.size() == 1 ? ",)" : i + 1 < shape.size() ? ", " : ")");
  }
  if (shape.empty()) shape_text += ")";
  std::string header = "{'descr': '" + to_string(dtype) + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
  // numpy >= 1.24 leaves room for the first dimension to grow in place (GROWTH_AXIS_MAX_DIGITS
  // = 21 in numpy/lib/format.py), so that our files are byte-identical to np.save's.
  if (!shape.empty()) header.append(21 - std::min<size_t>(21, std::to_string(shape[0]).size()), ' ');
  // numpy pads with spaces and ends with '\n' so that the data starts at a multiple of 64;
  // like numpy (_wrap_header) it pads 1..64 bytes, a whole 64 when already aligned.
  const auto padded = [&](size_t preamble) { return ((preamble + header.size() + 1) / 64 + 1) * 64; };
  size_t preamble = 10;
  if (padded(preamble) - preamble > 65535) preamble = 12;
  const size_t total = padded(preamble);
  header.append(total - preamble - header.size() - 1, ' ');
  header += '\n';
  std::string pre(kMagic, kMagicLen);
  const uint32_t hl = static_cast<uint32_t>(header.size());
  if (preamble == 10) {
    pre += '\x01';
    pre += '\x00';
    pre += static_cast<char>(hl & 0xff);
    pre += static_cast<char>((hl >> 8) & 0xff);
  } else {
    pre += '\x02';
    pre += '\x00';
    for (int s = 0; s < 32; s += 8) pre += static_cast<char>((hl >> s) & 0xff);
  }
  return pre + header;
}

void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape, const void* data) {
  const std::string header = npy_file_header(path, dtype, shape);
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  const uint64_t nbytes = n * item_size(dtype);
  if (nbytes > 0 && !data) fail(path, "write_npy: no data for a non-empty array");
  mlh::AtomicFile f(path);
  f.write(header.data(), header.size());
  if (nbytes > 0) f.write(data, nbytes);
  f.commit();
}

}  // namespace trm
