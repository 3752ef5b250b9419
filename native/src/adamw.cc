// Fused AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019), the
// PyTorch torch.optim.AdamW update, in place on weights and moments:
//   w <- w * (1 - lr * wd)
//   m <- b1 m + (1 - b1) g ;  v <- b2 v + (1 - b2) g^2
//   w <- w - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
#include <cmath>
#include <cstdio>
#include "kernels.h"
#include "pool.h"

namespace sharp {

// args: count lr b1 b2 eps step, then per variable: wOff gOff mOff vOff size wd
int adamw() {
  const int count = static_cast<int>(A(0));
  const double lr = g_args[1], b1 = g_args[2], b2 = g_args[3], eps = g_args[4], step = g_args[5];
  if (6 + 6 * count > kArgsLen) {
    std::snprintf(g_error, sizeof(g_error), "adamw: %d variables exceed one argument block", count);
    return -2;
  }
  const float bc1 = static_cast<float>(1.0 - std::pow(b1, step));
  const float bc2 = static_cast<float>(1.0 - std::pow(b2, step));
  const float fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2);
  const float flr = static_cast<float>(lr), feps = static_cast<float>(eps);
  const float invBc2Sqrt = 1.f / std::sqrt(bc2);
  const float stepSize = flr / bc1;
  for (int k = 0; k < count; k++) {
    const double* p = g_args + 6 + 6 * k;
    float* w = F(p[0]);
    const float* g = F(p[1]);
    float* m = F(p[2]);
    float* v = F(p[3]);
    const int64_t n = static_cast<int64_t>(p[4]);
    const float decay = static_cast<float>(1.0 - lr * p[5]);
    parallelFor(n, kGrainValues, [=](int64_t from, int64_t to) {
      for (int64_t i = from; i < to; i++) {
        const float gi = g[i];
        const float mi = fb1 * m[i] + (1.f - fb1) * gi;
        const float vi = fb2 * v[i] + (1.f - fb2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] = w[i] * decay - stepSize * mi / (std::sqrt(vi) * invBc2Sqrt + feps);
      }
    });
  }
  return 0;
}

}  // namespace sharp
