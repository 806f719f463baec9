// The error every stage of the host throws for what it reports to the user: main() prints
// the message and exits with its status. Bad input of any kind (command line, config, files,
// a plan that cannot be made) exits with kExitBadInput before anything is written.
#pragma once

#include <stdexcept>
#include <string>

namespace mlhost {

constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

class HostError : public std::runtime_error {
 public:
  explicit HostError(const std::string& message, int exit_code = kExitFailure)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace mlhost
