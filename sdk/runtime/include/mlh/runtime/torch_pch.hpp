// The LibTorch headers the runtime, the algorithms and their tests use, precompiled twice per
// build: once for the libraries and plugins (the runtime's), once for the test programs
// (tests/CMakeLists.txt).
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/optim.h>
#include <torch/serialize.h>
#include <torch/types.h>
