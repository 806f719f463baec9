// EXPECT_NO_DEFAULT(member): a member of a value-initialized spec struct (`Spec{}`) holds its
// type's blank value (0, false, "", an empty container, JSON null). Value-initialization
// leaves a member at that value unless the struct gives it a default member initializer, so a
// config-derived member that gains one (`int size = 5;`) fails here, named. A default equal to
// the blank value (`bool multi_color = false;`) cannot be told apart and passes: it is the
// value a member without a default gets anyway.
#pragma once

#include <type_traits>

#include <gtest/gtest.h>

#define EXPECT_NO_DEFAULT(member)                                                                          \
  EXPECT_TRUE((member) == std::decay_t<decltype(member)>{})                                                \
      << #member " has a default member initializer: a config-derived value is set by the algorithm's " \
         "one function from its config, with the config table's default"
