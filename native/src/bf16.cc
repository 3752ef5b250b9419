// Frozen weights stored as bfloat16 (the upper 16 bits of a float32), two to an int32 element, and
// computed in float32: a GEMM whose B operand is such a matrix decodes it a panel of columns at a
// time into a small float32 buffer of the thread's and multiplies that panel with one sgemm, so no
// float32 copy of the whole weight ever exists. Decoding is exact (a shift); the rounding happened
// once, when the weight was packed (src/model/bf16.ts).
#include <cstdio>
#include <cstring>
#include <vector>
#include "kernels.h"
#include "pool.h"

namespace sharp {

namespace {

inline float decode(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Output columns per panel: a decode step's few rows take narrow panels (many parts for the
// threads, each decoded into cache); a training product's many rows take wide ones (fewer sgemm
// calls, each of which packs A again).
constexpr int64_t kFewRows = 32;
constexpr int64_t kNarrowPanel = 64;
constexpr int64_t kWidePanel = 512;

struct Bf16Gemm {
  const float* a;     // [M, K]
  const uint16_t* b;  // [K, N] (tb false) or [N, K] (tb true), bfloat16
  float* c;           // [M, N]
  int64_t M, N, K;
  bool tb;
  int64_t panel;
};

// C[:, n0:n1] = A op(B)[:, n0:n1], op(B)'s columns decoded into p (room for K * panel values) first.
void panelProduct(const Bf16Gemm& g, int64_t n0, int64_t n1, float* p) {
  const int64_t w = n1 - n0;
  if (g.tb) {
    // op(B)'s columns n0..n1 are B's rows: decoded as [w, K], used transposed.
    const uint16_t* src = g.b + n0 * g.K;
    for (int64_t i = 0; i < w * g.K; i++) p[i] = decode(src[i]);
    sgemm(false, true, g.M, w, g.K, 1.f, g.a, g.K, p, g.K, 0.f, g.c + n0, g.N);
  } else {
    for (int64_t k = 0; k < g.K; k++) {
      const uint16_t* src = g.b + k * g.N + n0;
      float* dst = p + k * w;
      for (int64_t j = 0; j < w; j++) dst[j] = decode(src[j]);
    }
    sgemm(false, false, g.M, w, g.K, 1.f, g.a, g.K, p, w, 0.f, g.c + n0, g.N);
  }
}

}  // namespace

// C[M, N] = A[M, K] op(B), B bfloat16 pairs in int32 elements (tb: B is [N, K], else [K, N]).
// args: aRef bRef outRef M N K tb
int bf16MatMul() {
  const int64_t M = A(3), N = A(4), K = A(5);
  const bool tb = A(6) != 0;
  if (M < 0 || N < 0 || K < 0) {
    std::snprintf(g_error, sizeof(g_error), "bf16MatMul: negative dimension");
    return -2;
  }
  float* c = F(g_args[2]);
  if (M == 0 || N == 0) return 0;
  if (K == 0) {
    std::memset(c, 0, static_cast<size_t>(M * N) * sizeof(float));
    return 0;
  }
  const int64_t panel = M <= kFewRows ? kNarrowPanel : kWidePanel;
  const Bf16Gemm g{F(g_args[0]), reinterpret_cast<const uint16_t*>(P(g_args[1])), c, M, N, K, tb, panel};
  const int64_t panels = (N + panel - 1) / panel;
  // One buffer per part (a thread's run of panels), not per panel.
  auto run = [&g](int64_t from, int64_t to) {
    std::vector<float> buf(static_cast<size_t>(g.K * g.panel));
    for (int64_t q = from; q < to; q++) panelProduct(g, q * g.panel, (q + 1) * g.panel < g.N ? (q + 1) * g.panel : g.N, buf.data());
  };
  if (!blasOnCaller()) {
    run(0, panels);
    return 0;
  }
  // A panel's work: its decode (K * panel values) and its product (M * K * panel multiply-adds).
  parallelFor(panels, grainFor(M * K * panel + K * panel), run);
  return 0;
}

// out[n] float32 = the bfloat16 values packed in x (n / 2 int32 elements). args: xRef outRef n
int bf16Unpack() {
  const uint16_t* x = reinterpret_cast<const uint16_t*>(P(g_args[0]));
  float* out = F(g_args[1]);
  const int64_t n = A(2);
  parallelFor(n, kGrainValues, [x, out](int64_t from, int64_t to) {
    for (int64_t i = from; i < to; i++) out[i] = decode(x[i]);
  });
  return 0;
}

}  // namespace sharp
