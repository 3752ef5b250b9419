// Fused forward and backward kernels of the decoder's elementwise blocks, each one pass over its
// rows instead of the 6-14 small kernels (and their temporaries) of the tfjs composition:
//  - RMSNorm (HF LlamaRMSNorm) over the last axis: y = x * r * w, r = 1 / sqrt(mean(x^2) + eps);
//    backward dx = r * (dy * w) - x * (r^3 / D) * sum(dy * w * x), dw = sum over rows of dy * x * r
//    (r recomputed from x: one pass, cheaper than keeping a second output alive on the tape);
//  - SwiGLU's gate: out = silu(g) * u = g * s * u, s = sigmoid(g); backward
//    dg = dy * u * s * (1 + g * (1 - s)), du = dy * g * s;
//  - log softmax(logits)[target] per row; its backward dy * (onehot(target) - softmax(logits)),
//    the softmax recomputed from the logits (one exp pass, instead of an [N, V] tensor kept);
//  - RoPE (rotate-half, HF apply_rotary_pos_emb): o1 = x1 c - x2 s, o2 = x2 c + x1 s per head; its
//    backward is the rotation by -angle, the same kernel with s negated.
// Row sums accumulate in double, as the reductions do (reduce.cc).
#include <cmath>
#include <cstdio>
#include <vector>

#include "exp-loops.h"
#include "kernels.h"
#include "pool.h"

namespace sharp {

namespace {

// Sum of f(x[i]) in double over eight interleaved partial sums: no chain of dependent adds (a
// sequential double sum of a 2,000-column row is latency-bound), the same order on every call.
template <typename Term>
double sum8(const float* x, int64_t n, Term f) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) acc[k] += f(x[i + k]);
  for (int k = 0; i < n; i++, k++) acc[k] += f(x[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

double sum8(const float* x, int64_t n) {
  return sum8(x, n, [](float v) { return v; });
}

float rowInvRms(const float* x, int64_t cols, float eps) {
  const float ms = static_cast<float>(sum8(x, cols, [](float v) { return v * v; }) / static_cast<double>(cols));
  return 1.f / std::sqrt(ms + eps);
}

}  // namespace

// args: xOff wOff yOff rows cols eps
int rmsNorm() {
  const float* x = F(g_args[0]);
  const float* w = F(g_args[1]);
  float* y = F(g_args[2]);
  const int64_t rows = A(3), cols = A(4);
  const float eps = static_cast<float>(g_args[5]);
  parallelRows(rows, cols, [=](int64_t from, int64_t to) {
    for (int64_t r = from; r < to; r++) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const float inv = rowInvRms(xr, cols, eps);
      for (int64_t i = 0; i < cols; i++) yr[i] = (xr[i] * inv) * w[i];
    }
  });
  return 0;
}

// One part of the gradient per call: part 0 writes dx [rows, cols], part 1 dw [cols] (split by
// columns, each summed over the rows in order, so the sum does not depend on the thread count).
// args: dyOff xOff wOff outOff rows cols eps part
int rmsNormGrad() {
  const float* dy = F(g_args[0]);
  const float* x = F(g_args[1]);
  const float* w = F(g_args[2]);
  float* out = F(g_args[3]);
  const int64_t rows = A(4), cols = A(5);
  const float eps = static_cast<float>(g_args[6]);
  if (A(7) == 0) {
    parallelRows(rows, cols, [=](int64_t from, int64_t to) {
      for (int64_t r = from; r < to; r++) {
        const float* xr = x + r * cols;
        const float* dyr = dy + r * cols;
        float* dxr = out + r * cols;
        const float inv = rowInvRms(xr, cols, eps);
        double dot = 0;
        for (int64_t i = 0; i < cols; i++) dot += static_cast<double>(dyr[i] * w[i]) * xr[i];
        const float k = static_cast<float>(dot * inv * inv * inv / static_cast<double>(cols));
        for (int64_t i = 0; i < cols; i++) dxr[i] = inv * (dyr[i] * w[i]) - xr[i] * k;
      }
    });
    return 0;
  }
  std::vector<float> invs(static_cast<size_t>(rows));
  float* inv = invs.data();
  parallelRows(rows, cols, [=](int64_t from, int64_t to) {
    for (int64_t r = from; r < to; r++) inv[r] = rowInvRms(x + r * cols, cols, eps);
  });
  parallelFor(cols, grainFor(rows), [=](int64_t from, int64_t to) {
    std::vector<double> acc(static_cast<size_t>(to - from), 0.0);
    for (int64_t r = 0; r < rows; r++) {
      const float* xr = x + r * cols;
      const float* dyr = dy + r * cols;
      for (int64_t i = from; i < to; i++) acc[static_cast<size_t>(i - from)] += static_cast<double>(dyr[i]) * (xr[i] * inv[r]);
    }
    for (int64_t i = from; i < to; i++) out[i] = static_cast<float>(acc[static_cast<size_t>(i - from)]);
  });
  return 0;
}

// args: gOff uOff outOff n
int swiglu() {
  const float* g = F(g_args[0]);
  const float* u = F(g_args[1]);
  float* o = F(g_args[2]);
  parallelFor(A(3), kGrainValues, [=](int64_t from, int64_t to) {
    sigmoidInto(g + from, o + from, to - from);
    for (int64_t i = from; i < to; i++) o[i] = (g[i] * o[i]) * u[i];
  });
  return 0;
}

// One part per call: part 0 writes d gate, part 1 d up. args: dyOff gOff uOff outOff n part
int swigluGrad() {
  const float* dy = F(g_args[0]);
  const float* g = F(g_args[1]);
  const float* u = F(g_args[2]);
  float* o = F(g_args[3]);
  const bool gate = A(5) == 0;
  parallelFor(A(4), kGrainValues, [=](int64_t from, int64_t to) {
    sigmoidInto(g + from, o + from, to - from);
    if (gate) {
      for (int64_t i = from; i < to; i++) o[i] = dy[i] * u[i] * (o[i] * (1.f + g[i] * (1.f - o[i])));
    } else {
      for (int64_t i = from; i < to; i++) o[i] = dy[i] * (g[i] * o[i]);
    }
  });
  return 0;
}

// x [rows, heads, hd] rotated by tables cos, sin [rows, hd/2] (shared by the heads of a row).
// args: xOff cosOff sinOff outOff rows heads hd inverse
int rope() {
  const float* x = F(g_args[0]);
  const float* c = F(g_args[1]);
  const float* s = F(g_args[2]);
  float* o = F(g_args[3]);
  const int64_t rows = A(4), heads = A(5), hd = A(6);
  const float sign = A(7) != 0 ? -1.f : 1.f;
  const int64_t half = hd / 2;
  parallelRows(rows, heads * hd, [=](int64_t from, int64_t to) {
    for (int64_t r = from; r < to; r++) {
      const float* cr = c + r * half;
      const float* sr = s + r * half;
      for (int64_t h = 0; h < heads; h++) {
        const float* x1 = x + (r * heads + h) * hd;
        const float* x2 = x1 + half;
        float* o1 = o + (r * heads + h) * hd;
        float* o2 = o1 + half;
        for (int64_t i = 0; i < half; i++) {
          const float si = sign * sr[i];
          o1[i] = x1[i] * cr[i] - x2[i] * si;
          o2[i] = x2[i] * cr[i] + x1[i] * si;
        }
      }
    }
  });
  return 0;
}

namespace {

bool targetsOk(const int32_t* t, int64_t rows, int64_t cols, const char* name) {
  for (int64_t r = 0; r < rows; r++) {
    if (t[r] < 0 || t[r] >= cols) {
      std::snprintf(g_error, sizeof(g_error), "%s: target %d of row %lld is outside [0, %lld)", name, t[r], static_cast<long long>(r), static_cast<long long>(cols));
      return false;
    }
  }
  return true;
}

}  // namespace

// args: logitsOff targetsOff outOff rows cols
int selectedLogprobs() {
  const float* x = F(g_args[0]);
  const int32_t* t = I(g_args[1]);
  float* o = F(g_args[2]);
  const int64_t rows = A(3), cols = A(4);
  if (!targetsOk(t, rows, cols, "selectedLogprobs")) return -1;
  parallelRows(rows, cols, [=](int64_t from, int64_t to) {
    std::vector<float> e(static_cast<size_t>(cols));
    for (int64_t r = from; r < to; r++) {
      const float* xr = x + r * cols;
      const float m = rowMax(xr, cols);
      expShift(xr, m, e.data(), cols);
      const float logZ = std::log(static_cast<float>(sum8(e.data(), cols))) + m;
      o[r] = xr[t[r]] - logZ;
    }
  });
  return 0;
}

// args: dyOff logitsOff targetsOff outOff rows cols
int selectedLogprobsGrad() {
  const float* dy = F(g_args[0]);
  const float* x = F(g_args[1]);
  const int32_t* t = I(g_args[2]);
  float* g = F(g_args[3]);
  const int64_t rows = A(4), cols = A(5);
  if (!targetsOk(t, rows, cols, "selectedLogprobsGrad")) return -1;
  parallelRows(rows, cols, [=](int64_t from, int64_t to) {
    for (int64_t r = from; r < to; r++) {
      const float* xr = x + r * cols;
      float* gr = g + r * cols;
      expShift(xr, rowMax(xr, cols), gr, cols);
      const float inv = static_cast<float>(1.0 / sum8(gr, cols));  // one division per row, not per value
      const float d = dy[r];
      const float et = gr[t[r]];
      const float scale = -inv * d;
      for (int64_t i = 0; i < cols; i++) gr[i] *= scale;
      gr[t[r]] = (1.f - et * inv) * d;
    }
  });
  return 0;
}

}  // namespace sharp
