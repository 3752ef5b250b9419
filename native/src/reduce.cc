// Reductions over the middle dim of an [outer, red, inner] view (the TS side transposes first when
// the reduced axes are not one contiguous block), and Softmax over the last dim. Sums accumulate
// in double so the result is within float32 rounding of the exact value.
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>
#include "exp-loops.h"
#include "kernels.h"
#include "pool.h"

namespace sharp {

enum RedOp { kSum = 0, kMaxR, kMinR, kMean, kProd };

// int32 Sum: exact in int64, wrapped to int32 as tfjs stores it.
static int sumInt32(const int32_t* x, int32_t* o, int64_t outer, int64_t red, int64_t inner) {
  for (int64_t r = 0; r < outer; r++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t acc = 0;
      const int32_t* p = x + r * red * inner + i;
      for (int64_t k = 0; k < red; k++) acc += p[k * inner];
      o[r * inner + i] = static_cast<int32_t>(static_cast<uint32_t>(acc));
    }
  return 0;
}

// args: op xOff outOff outer red inner isInt32 (int32: Sum only)
int reduce() {
  const int op = static_cast<int>(A(0));
  const float* x = F(g_args[1]);
  float* o = F(g_args[2]);
  const int64_t outer = A(3), red = A(4), inner = A(5);
  if (op < kSum || op > kProd) {
    std::snprintf(g_error, sizeof(g_error), "reduce: unknown op %d", op);
    return -2;
  }
  if (A(6) != 0) {
    if (op != kSum) {
      std::snprintf(g_error, sizeof(g_error), "reduce: op %d has no int32 form", op);
      return -2;
    }
    return sumInt32(I(g_args[1]), I(g_args[2]), outer, red, inner);
  }
  const double init = op == kMaxR ? -std::numeric_limits<double>::infinity()
                      : op == kMinR ? std::numeric_limits<double>::infinity()
                      : op == kProd ? 1.0
                                    : 0.0;
  auto fold = [op](double acc, float v) -> double {
    switch (op) {
      case kMaxR: return (v > acc || std::isnan(v)) ? v : acc;
      case kMinR: return (v < acc || std::isnan(v)) ? v : acc;
      case kProd: return acc * v;
      default: return acc + v;
    }
  };
  const double scale = op == kMean && red > 0 ? 1.0 / static_cast<double>(red) : 1.0;
  if (inner == 1) {
    for (int64_t r = 0; r < outer; r++) {
      const float* row = x + r * red;
      double acc = init;
      if (op == kSum || op == kMean) {
        // Four partial sums let the compiler vectorise the double accumulation.
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t i = 0;
        for (; i + 4 <= red; i += 4) {
          s0 += row[i];
          s1 += row[i + 1];
          s2 += row[i + 2];
          s3 += row[i + 3];
        }
        for (; i < red; i++) s0 += row[i];
        acc = (s0 + s1) + (s2 + s3);
      } else {
        for (int64_t i = 0; i < red; i++) acc = fold(acc, row[i]);
      }
      o[r] = static_cast<float>(acc * scale);
    }
    return 0;
  }
  std::vector<double> acc(static_cast<size_t>(inner));
  for (int64_t r = 0; r < outer; r++) {
    for (int64_t i = 0; i < inner; i++) acc[i] = init;
    const float* base = x + r * red * inner;
    for (int64_t k = 0; k < red; k++) {
      const float* row = base + k * inner;
      if (op == kSum || op == kMean) {
        for (int64_t i = 0; i < inner; i++) acc[i] += row[i];
      } else {
        for (int64_t i = 0; i < inner; i++) acc[i] = fold(acc[i], row[i]);
      }
    }
    float* dst = o + r * inner;
    for (int64_t i = 0; i < inner; i++) dst[i] = static_cast<float>(acc[i] * scale);
  }
  return 0;
}

// Cumulative sum over the middle dim of [outer, len, inner], in float32 in order (as tfjs: each
// partial sum rounded), optionally exclusive and/or reversed. args: xOff outOff outer len inner exclusive reverse
int cumsum() {
  const float* x = F(g_args[0]);
  float* o = F(g_args[1]);
  const int64_t outer = A(2), len = A(3), inner = A(4);
  const bool exclusive = A(5) != 0, reverse = A(6) != 0;
  for (int64_t r = 0; r < outer; r++)
    for (int64_t i = 0; i < inner; i++) {
      const int64_t base = r * len * inner + i;
      float acc = 0.f;
      for (int64_t k = 0; k < len; k++) {
        const int64_t at = base + (reverse ? len - 1 - k : k) * inner;
        const float v = x[at];
        if (exclusive) {
          o[at] = acc;
          acc += v;
        } else {
          acc += v;
          o[at] = acc;
        }
      }
    }
  return 0;
}

// Softmax over the last dim of [rows, cols]. args: xOff outOff rows cols
int softmax() {
  const float* x = F(g_args[0]);
  float* o = F(g_args[1]);
  const int64_t rows = A(2), cols = A(3);
  parallelRows(rows, cols, [=](int64_t from, int64_t to) {
    for (int64_t r = from; r < to; r++) softmaxRow(x + r * cols, o + r * cols, cols);
  });
  return 0;
}

}  // namespace sharp
