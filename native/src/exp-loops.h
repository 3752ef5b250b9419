// The exp-based loops several kernels share (Exp, Sigmoid, Softmax, the fused kernels), compiled
// with the including file's target (the prebuilt binaries come in a baseline and an AVX2+FMA build).
#pragma once
#include <cstdint>
#include <limits>

#include "fastmath.h"
#include "kernels.h"

namespace sharp {

// o = exp(x - shift)
static inline void expShift(const float* x, float shift, float* o, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = fastExp(x[i] - shift);
}

// o = 1 / (1 + exp(-x))
static inline void sigmoidInto(const float* x, float* o, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = 1.f / (1.f + fastExp(-x[i]));
}

static inline float rowMax(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}

// o = softmax(x) of one row of n values (x and o may be the same array); the sum in double.
static inline void softmaxRow(const float* x, float* o, int64_t n) {
  expShift(x, rowMax(x, n), o, n);
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += o[i];
  const float inv = static_cast<float>(1.0 / s);
  for (int64_t i = 0; i < n; i++) o[i] *= inv;
}

}  // namespace sharp
