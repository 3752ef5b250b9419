// Only in the prebuilt binary (scripts/build-prebuild.mjs compiles this file alone with -mavx2
// -mfma): the exp loops of Exp, Sigmoid and Softmax for CPUs with AVX2 and FMA, chosen at run time
// (g_avx2, set at load). The rest of that binary targets the x86-64 baseline, where these loops ran
// 4-6x slower than in a -march=native local build. fastExp is `static inline`, so this file's AVX2
// copy can never stand in for the baseline one elsewhere.
#include "../src/fastmath.h"
#include "../src/kernels.h"

namespace sharp {

void expShiftAvx2(const float* x, float shift, float* o, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = fastExp(x[i] - shift);
}

void sigmoidAvx2(const float* x, float* o, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = 1.f / (1.f + fastExp(-x[i]));
}

}  // namespace sharp
