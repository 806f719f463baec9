// What a device is to the rest of the host: the traits of the LibTorch backend that runs it
// (mlh/device_traits.hpp, the one table the host and the worker's runtime share), found by
// the type of its torch device. Ranking, planning, the effects marking, calibration, the
// launch layout and the command line all ask here, so a device plugin whose devices run on an
// existing backend (a third-party "cpuset" on LibTorch's cpu) gets that backend's defaults and
// effects alike.
#pragma once

#include <string>

#include <mlh/device_traits.hpp>

#include "probe/device.hpp"

namespace mlhost {

using TorchBackend = mlh::DeviceTraits;

// The backend of `d`: by the type of its torch device ("cuda:1" -> cuda), or by its kind
// where a record names no torch device.
const TorchBackend& torch_backend(const Device& d);

// The entry for a LibTorch device type or a device kind a user names ("cuda" in --device
// cuda:1), or nullptr when the table has none.
const TorchBackend* find_torch_backend(const std::string& type);

}  // namespace mlhost
