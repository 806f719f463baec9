// .npy reading and writing: round trips of every dtype, hand-written headers of versions
// 1.0 / 2.0 / 3.0, big-endian data, 0-d and empty arrays, and each kind of broken file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "data/npy.hpp"
#include "fixtures.hpp"

namespace {

using namespace trm;
using trm_test::npy_bytes;
using trm_test::write_bytes;

template <typename T>
void round_trip(const TempDir& dir, DType t, std::vector<T> values) {
  const std::string path = dir / ("a" + std::to_string(static_cast<int>(t)) + ".npy");
  const std::vector<int64_t> shape{2, static_cast<int64_t>(values.size() / 2)};
  write_npy(path, t, shape, values.data());
  // numpy's layout: the data starts at a multiple of 64.
  const std::string bytes = trm_test::read_bytes(path);
  EXPECT_EQ((bytes.size() - values.size() * sizeof(T)) % 64, 0u) << to_string(t);
  const size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  const NpyArray a = NpyArray::open(path);
  EXPECT_EQ(a.dtype(), t);
  EXPECT_EQ(a.shape(), shape);
  EXPECT_EQ(a.size(), static_cast<int64_t>(values.size()));
  EXPECT_EQ(a.path(), path);
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      EXPECT_EQ(a.as_double(static_cast<int64_t>(i)), static_cast<double>(values[i])) << to_string(t) << " " << i;
      EXPECT_MLH_ERROR(a.as_int64(0), "not an integer type");
    } else {
      EXPECT_EQ(a.as_int64(static_cast<int64_t>(i)), static_cast<int64_t>(values[i])) << to_string(t) << " " << i;
      EXPECT_EQ(a.as_double(static_cast<int64_t>(i)), static_cast<double>(values[i]));
    }
  }
  EXPECT_EQ(std::memcmp(a.data(), values.data(), values.size() * sizeof(T)), 0);
}

TEST(Npy, RoundTripEveryDType) {
  TempDir dir;
  round_trip<uint8_t>(dir, DType::kBool, {0, 1, 1, 0});
  round_trip<int8_t>(dir, DType::kInt8, {-128, -1, 0, 127});
  round_trip<uint8_t>(dir, DType::kUInt8, {0, 1, 200, 255});
  round_trip<int16_t>(dir, DType::kInt16, {-32768, -5, 7, 32767});
  round_trip<uint16_t>(dir, DType::kUInt16, {0, 1, 40000, 65535});
  round_trip<int32_t>(dir, DType::kInt32, {INT32_MIN, -3, 11, INT32_MAX});
  round_trip<uint32_t>(dir, DType::kUInt32, {0, 1, 3000000000u, UINT32_MAX});
  round_trip<int64_t>(dir, DType::kInt64, {INT64_MIN, -9, 1ll << 40, INT64_MAX});
  round_trip<uint64_t>(dir, DType::kUInt64, {0, 1, 1ull << 40, 1ull << 62});
  round_trip<float>(dir, DType::kFloat32, {-1.5f, 0.f, 3.25f, 1e30f});
  round_trip<double>(dir, DType::kFloat64, {-1.5, 0.0, 3.25e-300, 1e300});
  // float16: 1.0 = 0x3C00, -2.0 = 0xC000, 65504 = 0x7BFF (max), 2^-24 = 0x0001 (subnormal).
  const std::vector<uint16_t> halves{0x3C00, 0xC000, 0x7BFF, 0x0001};
  write_npy(dir / "h.npy", DType::kFloat16, {4}, halves.data());
  const NpyArray h = NpyArray::open(dir / "h.npy");
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_EQ(h.as_double(0), 1.0);
  EXPECT_EQ(h.as_double(1), -2.0);
  EXPECT_EQ(h.as_double(2), 65504.0);
  EXPECT_EQ(h.as_double(3), std::ldexp(1.0, -24));
}

TEST(Npy, DescrStrings) {
  EXPECT_EQ(to_string(DType::kInt32), "<i4");
  EXPECT_EQ(to_string(DType::kUInt8), "|u1");
  EXPECT_EQ(to_string(DType::kBool), "|b1");
  EXPECT_EQ(to_string(DType::kFloat16), "<f2");
}

TEST(Npy, CopyInt32AndMinMax) {
  TempDir dir;
  const std::vector<int64_t> v{5, -7, 12, 3, 2147483647, -2147483648ll, 2147483648ll};
  write_npy(dir / "a.npy", DType::kInt64, {7}, v.data());
  const NpyArray a = NpyArray::open(dir / "a.npy");
  int32_t out[6];
  a.copy_int32(0, 6, out);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], v[static_cast<size_t>(i)]);
  a.copy_int32(2, 2, out);
  EXPECT_EQ(out[0], 12);
  EXPECT_EQ(out[1], 3);
  EXPECT_MLH_ERROR(a.copy_int32(5, 2, out), "does not fit int32");   // 2^31
  EXPECT_MLH_ERROR(a.copy_int32(6, 2, out), a.path());                // past the end
  EXPECT_MLH_ERROR(a.copy_int32(-1, 1, out), "outside");
  EXPECT_MLH_ERROR(a.as_int64(7), "outside");
  int64_t lo, hi;
  a.min_max(0, 4, lo, hi);
  EXPECT_EQ(lo, -7);
  EXPECT_EQ(hi, 12);
  const std::vector<float> f{1.f};
  write_npy(dir / "f.npy", DType::kFloat32, {1}, f.data());
  EXPECT_MLH_ERROR(NpyArray::open(dir / "f.npy").copy_int32(0, 1, out), "not an integer type");
  // A uint64 above int64's range is refused, not wrapped.
  const std::vector<uint64_t> big{~0ull};
  write_npy(dir / "u.npy", DType::kUInt64, {1}, big.data());
  EXPECT_MLH_ERROR(NpyArray::open(dir / "u.npy").as_int64(0), "int64");
  EXPECT_MLH_ERROR(NpyArray::open(dir / "u.npy").copy_int32(0, 1, out), "does not fit int32");
}

TEST(Npy, HandWrittenVersions) {
  TempDir dir;
  const std::string data("\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00", 12);
  for (int major : {1, 2, 3}) {
    const std::string path = dir / ("v" + std::to_string(major) + ".npy");
    // Unpadded header, double quotes, no trailing comma: still a valid Python literal.
    write_bytes(path, npy_bytes(major, "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (3,)}\n", data));
    const NpyArray a = NpyArray::open(path);
    EXPECT_EQ(a.major_version(), major);
    EXPECT_EQ(a.shape(), std::vector<int64_t>{3});
    EXPECT_EQ(a.as_int64(0), 1);
    EXPECT_EQ(a.as_int64(2), 3);
  }
  // Keys in another order, extra spaces, '=' (native) order, Python 2's long suffix.
  write_bytes(dir / "o.npy", npy_bytes(1, "{ 'shape' : ( 1 , 3L ) , 'fortran_order':False,'descr':'=i4' , }  \n", data));
  const NpyArray o = NpyArray::open(dir / "o.npy");
  EXPECT_EQ(o.shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(o.as_int64(1), 2);
}

TEST(Npy, BigEndianIsSwappedOnAccess) {
  TempDir dir;
  write_bytes(dir / "be.npy", npy_bytes(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }\n",
                                        std::string("\x00\x00\x00\x01\xff\xff\xff\xfe\x00\x01\x00\x00", 12)));
  const NpyArray a = NpyArray::open(dir / "be.npy");
  EXPECT_TRUE(a.big_endian());
  EXPECT_EQ(a.as_int64(0), 1);
  EXPECT_EQ(a.as_int64(1), -2);
  EXPECT_EQ(a.as_int64(2), 65536);
  int32_t out[3];
  a.copy_int32(0, 3, out);
  EXPECT_EQ(out[1], -2);
  int64_t lo, hi;
  a.min_max(0, 3, lo, hi);
  EXPECT_EQ(lo, -2);
  EXPECT_EQ(hi, 65536);
  // Big-endian float64 1.5 = 3F F8 00.. ; a 1-byte type with '>' needs no swap.
  write_bytes(dir / "bf.npy", npy_bytes(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }\n",
                                        std::string("\x3f\xf8\x00\x00\x00\x00\x00\x00", 8)));
  EXPECT_EQ(NpyArray::open(dir / "bf.npy").as_double(0), 1.5);
}

TEST(Npy, ZeroDimAndEmptyArrays) {
  TempDir dir;
  const int32_t scalar = 42;
  write_npy(dir / "s.npy", DType::kInt32, {}, &scalar);
  EXPECT_NE(trm_test::read_bytes(dir / "s.npy").find("'shape': (), }"), std::string::npos);
  const NpyArray s = NpyArray::open(dir / "s.npy");
  EXPECT_TRUE(s.shape().empty());
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s.as_int64(0), 42);
  write_npy(dir / "e.npy", DType::kUInt8, {0, 81}, nullptr);
  const NpyArray e = NpyArray::open(dir / "e.npy");
  EXPECT_EQ(e.shape(), (std::vector<int64_t>{0, 81}));
  EXPECT_EQ(e.size(), 0);
  EXPECT_EQ(e.data(), nullptr);
  EXPECT_MLH_ERROR(e.as_int64(0), "outside");
  int32_t out[1];
  e.copy_int32(0, 0, out);  // an empty range of an empty array is fine
  // Fortran order is the same layout for 1-d: accepted.
  write_bytes(dir / "f1.npy", npy_bytes(1, "{'descr': '|u1', 'fortran_order': True, 'shape': (2,), }\n", "\x05\x06"));
  EXPECT_EQ(NpyArray::open(dir / "f1.npy").as_int64(1), 6);
}

TEST(Npy, MovedArrayKeepsItsMapping) {
  TempDir dir;
  const int32_t v[2] = {3, 4};
  write_npy(dir / "m.npy", DType::kInt32, {2}, v);
  NpyArray a = NpyArray::open(dir / "m.npy");
  NpyArray b = std::move(a);
  EXPECT_EQ(b.as_int64(1), 4);
  NpyArray c;
  c = std::move(b);
  EXPECT_EQ(c.as_int64(0), 3);
}

TEST(Npy, BrokenFilesNameThePathAndTheProblem) {
  TempDir dir;
  const std::string ok_header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
  const std::string data8("\x01\x00\x00\x00\x02\x00\x00\x00", 8);
  const std::string good = npy_bytes(1, ok_header, data8);
  struct Case {
    const char* name;
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"empty", "", "file too short"},
      {"short", std::string("\x93NUMPY\x01", 7), "file too short"},
      {"magic", "\x93NUMPX" + good.substr(6), "bad magic"},
      {"version", npy_bytes(4, ok_header, data8), "unsupported format version 4"},
      {"truncated_header", good.substr(0, 30), "truncated header"},
      {"not_dict", npy_bytes(1, "['descr', '<i4']\n", data8), "not a dict"},
      {"garbage", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,) junk}\n", data8), "expected ',' or '}'"},
      {"unterminated", npy_bytes(1, "{'descr': '<i4", ""), "ends early"},
      {"text_after", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,)} x\n", data8), "text after"},
      {"no_descr", npy_bytes(1, "{'fortran_order': False, 'shape': (2,), }\n", data8), "no 'descr'"},
      {"no_shape", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, }\n", data8), "no 'shape'"},
      {"no_fortran", npy_bytes(1, "{'descr': '<i4', 'shape': (2,), }\n", data8), "no 'fortran_order'"},
      {"dup_key", npy_bytes(1, "{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (2,)}\n", data8), "duplicate"},
      {"unknown_key", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", data8), "unknown key"},
      {"complex", npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", data8), "unsupported dtype descr '<c8'"},
      {"object", npy_bytes(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n", data8), "unsupported dtype descr '|O'"},
      {"structured", npy_bytes(1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }\n", data8), "structured"},
      {"fortran", npy_bytes(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (1, 2), }\n", data8), "fortran_order True"},
      {"fortran_value", npy_bytes(1, "{'descr': '<i4', 'fortran_order': 0, 'shape': (2,), }\n", data8), "not True or False"},
      {"data_short", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }\n", data8), "data too short"},
      {"negative", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (-1,), }\n", data8), "negative"},
      {"overflow_dim", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", data8), "overflows"},
      {"overflow_product", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }\n", data8), "data too short"},
      {"shape_float", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2.0,), }\n", data8), "expected ',' or ')'"},
      {"shape_not_tuple", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': 2, }\n", data8), "tuple"},
      {"huge_header_len", std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12) + "{}", "implausibly large"},
  };
  for (const auto& c : cases) {
    const std::string path = dir / (std::string(c.name) + ".npy");
    write_bytes(path, c.bytes);
    SCOPED_TRACE(c.name);
    EXPECT_MLH_ERROR(NpyArray::open(path), path);
    EXPECT_MLH_ERROR(NpyArray::open(path), c.message);
  }
  EXPECT_MLH_ERROR(NpyArray::open(dir / "missing.npy"), "cannot open");
  EXPECT_MLH_ERROR(NpyArray::open(dir.path()), "not a regular file");
  EXPECT_MLH_ERROR(write_npy(dir / "w.npy", DType::kInt32, {-2}, data8.data()), "negative dimension");
  EXPECT_MLH_ERROR(write_npy(dir / "no/such/dir/w.npy", DType::kInt32, {2}, data8.data()), "no/such/dir/w.npy");
}

}  // namespace
