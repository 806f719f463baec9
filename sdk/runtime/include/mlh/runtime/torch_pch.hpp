// The LibTorch headers the runtime and its tests use, precompiled once per target.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/optim.h>
#include <torch/serialize.h>
#include <torch/types.h>
