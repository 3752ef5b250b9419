// The exp-based loops several kernels share (Exp, Sigmoid, Softmax, the fused kernels): the
// AVX2+FMA copies in the prebuilt binary where the CPU has them (g_avx2), else the ones compiled
// with the including file. Only native/src includes this; native/prebuild/exp-avx2.cc must not
// (these are static inline, so no AVX2-compiled copy can stand in for the baseline one).
#pragma once
#include <cstdint>
#include <limits>

#include "fastmath.h"
#include "kernels.h"

namespace sharp {

// o = exp(x - shift)
static inline void expShift(const float* x, float shift, float* o, int64_t n) {
#ifdef SHARP_PORTABLE
  if (g_avx2) {
    expShiftAvx2(x, shift, o, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) o[i] = fastExp(x[i] - shift);
}

// o = 1 / (1 + exp(-x))
static inline void sigmoidInto(const float* x, float* o, int64_t n) {
#ifdef SHARP_PORTABLE
  if (g_avx2) {
    sigmoidAvx2(x, o, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) o[i] = 1.f / (1.f + fastExp(-x[i]));
}

static inline float rowMax(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace sharp
