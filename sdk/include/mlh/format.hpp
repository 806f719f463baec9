// Numbers in log lines: fixed or scientific notation with a given number of digits, the same
// in every plugin ("loss 0.1234", "lr 1.00e-04").
#ifndef MLH_FORMAT_HPP
#define MLH_FORMAT_HPP

#include <sstream>
#include <string>

namespace mlh {

inline std::string fixed(double value, int digits = 2) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << value;
  return s.str();
}

inline std::string scientific(double value, int digits = 2) {
  std::ostringstream s;
  s.setf(std::ios::scientific);
  s.precision(digits);
  s << value;
  return s.str();
}

}  // namespace mlh

#endif  // MLH_FORMAT_HPP
