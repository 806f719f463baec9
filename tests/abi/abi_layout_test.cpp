// The locked ABI layout and constants, checked at runtime from C++ and compared with what
// the C compiler computed (abi_static_c11.c). The same X-macro lists drive both, so a
// struct or constant is listed once. The C side also checks everything at compile time.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include <mlh/mlh.h>

#include "abi_layout.h"

namespace {

#define MLH_ABI_STRUCT MLH_ABI_STRUCT_ROW
#define MLH_ABI_GROWN MLH_ABI_GROWN_ROW
#define MLH_ABI_FIELD MLH_ABI_FIELD_ROW
const mlh_abi_layout_row kCxxLayout[] = {
#include "abi_layout_lp64.def"
};
#undef MLH_ABI_STRUCT
#undef MLH_ABI_GROWN
#undef MLH_ABI_FIELD

// Field types, checked by the C++ compiler as well (the C side uses _Generic).
#define MLH_ABI_STRUCT(T, size_, align_) static_assert(std::is_standard_layout<T>::value, #T);
#define MLH_ABI_GROWN(T, minor, size_)
#define MLH_ABI_FIELD(T, f, off_, size_, ftype) \
  static_assert(std::is_same<decltype(T::f), ftype>::value, #T "." #f " must keep type " #ftype);
#include "abi_layout_lp64.def"
#undef MLH_ABI_STRUCT
#undef MLH_ABI_GROWN
#undef MLH_ABI_FIELD

static_assert(std::is_same<mlh_status, int32_t>::value, "mlh_status must stay int32_t");
static_assert(std::is_same<mlh_negotiate_fn, mlh_abi_t_negotiate_fn>::value,
              "mlh_negotiate_fn must keep its signature");
// Bit masks are unsigned (the 'u' suffix), so they combine into uint32_t fields cleanly.
static_assert(std::is_same<decltype(MLH_PRECISION_FP32), unsigned>::value, "");
static_assert(std::is_same<decltype(MLH_LIMIT_NO_DISTRIBUTED), unsigned>::value, "");
static_assert(std::is_same<decltype(MLH_TELEMETRY_POWER), unsigned>::value, "");

struct ConstantRow {
  const char* name;
  long long expected;
  long long actual;
};

#define MLH_ABI_CONSTANT(name, value) {#name, (long long)(value), (long long)(name)},
const ConstantRow kConstants[] = {
#include "abi_constants.def"
};
#undef MLH_ABI_CONSTANT

constexpr bool kLp64 =
#if defined(__LP64__) || defined(_LP64)
    true;
#else
    false;
#endif

std::string row_name(const mlh_abi_layout_row& r) {
  return std::string(r.type) + (r.field ? std::string(".") + r.field : std::string());
}

// The row that gives a struct's current size: its last whole-struct row (the released size,
// or the size since the last minor that grew it).
std::map<std::string, const mlh_abi_layout_row*> current_size_rows() {
  std::map<std::string, const mlh_abi_layout_row*> rows;
  for (const auto& r : kCxxLayout)
    if (!r.field) rows[r.type] = &r;
  return rows;
}

TEST(AbiLayout, CxxLayoutMatchesLockedLp64Numbers) {
  if (!kLp64) GTEST_SKIP() << "the locked numbers are for LP64 targets";
  const auto current = current_size_rows();
  for (const auto& r : kCxxLayout) {
    SCOPED_TRACE(row_name(r));
    if (r.field) {
      EXPECT_EQ(r.offset, r.expected_offset);
      EXPECT_EQ(r.size, r.expected_size);
      continue;
    }
    if (r.since_minor == 0) {
      EXPECT_EQ(r.align, r.expected_align);
    }
    if (current.at(r.type) == &r) {
      EXPECT_EQ(r.size, r.expected_size) << "the struct's size now";
    } else {
      EXPECT_GT(r.size, r.expected_size) << "a later minor grew it";
    }
  }
}

// Minor 1 appended describe_run to the algorithm table: the only struct that grew so far.
TEST(AbiLayout, OnlyAppendedRowsAreOfLaterMinors) {
  std::vector<std::string> grown;
  for (const auto& r : kCxxLayout)
    if (!r.field && r.since_minor > 0) {
      grown.push_back(std::string(r.type) + " 1." + std::to_string(r.since_minor));
      EXPECT_LE(r.since_minor, static_cast<unsigned>(MLH_ABI_VERSION_MINOR));
    }
  EXPECT_EQ(grown, std::vector<std::string>{"mlh_algorithm_plugin 1.1"});
}

TEST(AbiLayout, CAndCxxCompilersAgree) {
  constexpr size_t n = sizeof(kCxxLayout) / sizeof(kCxxLayout[0]);
  ASSERT_EQ(mlh_abi_c_layout_count, n);
  for (size_t i = 0; i < n; ++i) {
    const auto& c = mlh_abi_c_layout[i];
    const auto& cxx = kCxxLayout[i];
    SCOPED_TRACE(row_name(cxx));
    EXPECT_STREQ(c.type, cxx.type);
    EXPECT_EQ(c.field == nullptr, cxx.field == nullptr);
    if (c.field && cxx.field) {
      EXPECT_STREQ(c.field, cxx.field);
    }
    EXPECT_EQ(c.offset, cxx.offset);
    EXPECT_EQ(c.size, cxx.size);
    EXPECT_EQ(c.align, cxx.align);
  }
}

// The list names every field: between listed fields, and after the last one, there is only
// alignment padding (less than the struct's alignment), and every struct starts with
// uint32_t struct_size. A field added to a header but not to the list fails here.
TEST(AbiLayout, ListCoversEveryFieldAndStartsWithStructSize) {
  std::map<std::string, std::vector<const mlh_abi_layout_row*>> fields;
  std::map<std::string, const mlh_abi_layout_row*> structs = current_size_rows();
  std::vector<std::string> order;
  for (const auto& r : kCxxLayout) {
    if (!r.field) {
      if (r.since_minor == 0) order.push_back(r.type);
    } else {
      fields[r.type].push_back(&r);
    }
  }
  EXPECT_EQ(order.size(), 13u) << "13 ABI structs are locked; a new struct needs rows too";
  for (const auto& type : order) {
    SCOPED_TRACE(type);
    const auto& fs = fields[type];
    ASSERT_FALSE(fs.empty());
    EXPECT_STREQ(fs.front()->field, "struct_size");
    EXPECT_EQ(fs.front()->offset, 0u);
    EXPECT_EQ(fs.front()->size, 4u);
    size_t end = 0;
    for (const auto* f : fs) {
      SCOPED_TRACE(f->field);
      EXPECT_GE(f->offset, end) << "fields are listed in declaration order";
      EXPECT_LT(f->offset - end, structs[type]->align) << "a field is missing from the list";
      end = f->offset + f->size;
    }
    EXPECT_LT(structs[type]->size - end, structs[type]->align) << "a field is missing at the end";
  }
}

TEST(AbiConstants, KeepTheirValues) {
  for (const auto& c : kConstants) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.actual, c.expected);
  }
  EXPECT_EQ(MLH_ABI_VERSION_MAJOR, 1);
  EXPECT_STREQ(MLH_ENTRY_SYMBOL, "mlh_plugin_negotiate");
}

TEST(AbiConstants, StatusCodesAreDistinct) {
  const int codes[] = {MLH_OK,           MLH_ERR_UNKNOWN,    MLH_ERR_INVALID_ARGUMENT,
                       MLH_ERR_UNSUPPORTED, MLH_ERR_UNAVAILABLE, MLH_ERR_VERSION,
                       MLH_ERR_OUT_OF_MEMORY, MLH_ERR_IO,      MLH_ERR_CANCELLED,
                       MLH_ERR_INTERNAL};
  for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); ++i)
    for (size_t j = i + 1; j < sizeof(codes) / sizeof(codes[0]); ++j) EXPECT_NE(codes[i], codes[j]);
}

TEST(AbiHeaders, CompileAndWorkAsC11AndC99) {
  EXPECT_EQ(mlh_abi_c11_has_field_checks(), 0);
  EXPECT_EQ(mlh_abi_c99_smoke(), 1);
}

TEST(AbiHeaders, HasFieldFromCxx) {
  mlh_telemetry_sample s{};
  s.struct_size = static_cast<uint32_t>(offsetof(mlh_telemetry_sample, temperature_celsius));
  EXPECT_TRUE(MLH_HAS_FIELD(&s, mlh_telemetry_sample, memory_total_bytes));
  EXPECT_FALSE(MLH_HAS_FIELD(&s, mlh_telemetry_sample, temperature_celsius));
  s.struct_size = sizeof(s);
  EXPECT_TRUE(MLH_HAS_FIELD(&s, mlh_telemetry_sample, power_watts));
  const mlh_telemetry_sample* none = nullptr;
  EXPECT_FALSE(MLH_HAS_FIELD(none, mlh_telemetry_sample, struct_size));
}

}  // namespace
