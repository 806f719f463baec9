/* Compiled by the C compiler as strict C11 (-std=c11 -Wall -Wextra -Werror -pedantic):
 *  1. the ABI headers compile as C;
 *  2. every constant keeps its value and every field its exact type (any target);
 *  3. every struct keeps its size and alignment and every field its offset and size, with
 *     the LP64 numbers written out in abi_layout_lp64.def.
 * A change to the ABI that breaks any of these fails the build of the tests. */
#include <mlh/mlh.h>

#include "abi_layout.h"

/* 2. Constants. */
#define MLH_ABI_CONSTANT(name, value) \
  _Static_assert((name) == (value), "ABI constant " #name " must stay " #value);
#include "abi_constants.def"
#undef MLH_ABI_CONSTANT

_Static_assert(MLH_ABI_VERSION_MINOR >= 0, "MLH_ABI_VERSION_MINOR is a non-negative integer");
_Static_assert(sizeof(MLH_ENTRY_SYMBOL) == sizeof("mlh_plugin_negotiate"),
               "MLH_ENTRY_SYMBOL must stay \"mlh_plugin_negotiate\"");
_Static_assert(_Generic((mlh_status)0, int32_t: 1, default: 0), "mlh_status must stay int32_t");
_Static_assert(_Generic((mlh_negotiate_fn)0, mlh_abi_t_negotiate_fn: 1, default: 0),
               "mlh_negotiate_fn must keep its signature");

/* 2. Field types, on every target: &field must be a pointer to exactly `ftype`. */
#define MLH_ABI_STRUCT(T, size_, align_)
#define MLH_ABI_GROWN(T, minor, size_)
#define MLH_ABI_FIELD(T, f, off_, size_, ftype)                    \
  _Static_assert(_Generic(&((T*)0)->f, ftype*: 1, default: 0), \
                 "ABI field " #T "." #f " must keep type " #ftype);
#include "abi_layout_lp64.def"
#undef MLH_ABI_STRUCT
#undef MLH_ABI_GROWN
#undef MLH_ABI_FIELD

/* 3. LP64 layout. Other data models (ILP32, LLP64) have their own numbers, not locked yet.
 * A struct is at least its released size here (a later minor may have grown it: the fields'
 * offsets pin everything it had); abi_layout_test.cpp checks its exact current size. */
#if defined(__LP64__) || defined(_LP64)
#define MLH_ABI_STRUCT(T, size_, align_)                                          \
  _Static_assert(sizeof(T) >= (size_), "sizeof(" #T ") must stay at least " #size_); \
  _Static_assert(_Alignof(T) == (align_), "_Alignof(" #T ") must stay " #align_);
#define MLH_ABI_GROWN(T, minor, size_) \
  _Static_assert(sizeof(T) >= (size_), "sizeof(" #T ") since 1." #minor " must stay at least " #size_);
#define MLH_ABI_FIELD(T, f, off_, size_, ftype)                                       \
  _Static_assert(offsetof(T, f) == (off_), "offsetof(" #T ", " #f ") must stay " #off_); \
  _Static_assert(sizeof(((T*)0)->f) == (size_), "sizeof(" #T "." #f ") must stay " #size_);
#include "abi_layout_lp64.def"
#undef MLH_ABI_STRUCT
#undef MLH_ABI_GROWN
#undef MLH_ABI_FIELD
#endif

/* The same list as a table, with what this C compiler computed, for the C++ test to compare
 * against its own view and against the locked numbers. */
#define MLH_ABI_STRUCT MLH_ABI_STRUCT_ROW
#define MLH_ABI_GROWN MLH_ABI_GROWN_ROW
#define MLH_ABI_FIELD MLH_ABI_FIELD_ROW
const mlh_abi_layout_row mlh_abi_c_layout[] = {
#include "abi_layout_lp64.def"
};
#undef MLH_ABI_STRUCT
#undef MLH_ABI_GROWN
#undef MLH_ABI_FIELD
const size_t mlh_abi_c_layout_count = sizeof(mlh_abi_c_layout) / sizeof(mlh_abi_c_layout[0]);

/* MLH_HAS_FIELD from C: a v1.0 response holds `table`; one cut before it does not. Returns
 * the number of failed checks. */
int mlh_abi_c11_has_field_checks(void) {
  int failures = 0;
  mlh_negotiate_response response = {0};
  const mlh_negotiate_response* none = NULL;
  response.struct_size = (uint32_t)sizeof(response);
  failures += !MLH_HAS_FIELD(&response, mlh_negotiate_response, table);
  response.struct_size = (uint32_t)offsetof(mlh_negotiate_response, table);
  failures += MLH_HAS_FIELD(&response, mlh_negotiate_response, table);
  failures += !MLH_HAS_FIELD(&response, mlh_negotiate_response, version);
  failures += MLH_HAS_FIELD(none, mlh_negotiate_response, struct_size);
  return failures;
}
