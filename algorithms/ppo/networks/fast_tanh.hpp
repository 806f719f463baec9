// tanh for the MLP's plain-C++ paths (collection inference in mlp.cpp, the CartPole update
// in mlp_fast.cpp), one function so both compute the same activations: Eigen's
// generic_fast_tanh_float, a 13/6 rational approximation on [-c, c] within a few float ulps
// of std::tanh (within 2e-7 relative below 4e-4, where Eigen returns x itself); branch-free,
// so the compiler vectorises the loops calling it.
#pragma once

namespace ppo {

__attribute__((optimize("no-trapping-math"))) inline float fast_tanh(float a) {
  const float c = 7.90531110763549805f;
  float x = a > c ? c : a;
  x = x < -c ? -c : x;
  const float x2 = x * x;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * x;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return p / q;
}

}  // namespace ppo
