// How the host starts its worker program (run/worker.hpp): its own executable with this flag
// and a descriptor holding the spec. Planning reads it too, to tell the workers of other runs
// on this machine (plan/machine_share.hpp).
#pragma once

namespace mlhost {

constexpr const char* kWorkerSpecFlag = "--mlh-worker-spec-fd";

}  // namespace mlhost
