// The label value that no loss or metric counts, as the reference's IGNORE_LABEL_ID: the
// sampler maps a dataset's ignore_label_id to it, the losses skip it. Shared by the data
// library and the model (header only, no LibTorch).
#pragma once

#include <cstdint>

namespace trm {

constexpr int32_t kIgnoreLabel = -100;

}  // namespace trm
