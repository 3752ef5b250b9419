// Elementwise float32 kernels: binary ops with numpy broadcasting, unary ops, AddN and Select.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#include "exp-loops.h"
#include "kernels.h"
#include "pool.h"

namespace sharp {

enum BinOp { kAdd = 0, kSub, kMul, kDiv, kMax, kMin, kSqDiff, kPow };
enum UnOp { kExp = 0, kLog, kNeg, kSqrt, kRsqrt, kSquare, kSigmoid, kTanh, kAbs, kRelu, kReciprocal, kSin, kCos, kLog1p, kSoftplus };

template <int OP>
static inline float bin(float x, float y) {
  if constexpr (OP == kAdd) return x + y;
  if constexpr (OP == kSub) return x - y;
  if constexpr (OP == kMul) return x * y;
  if constexpr (OP == kDiv) return x / y;
  if constexpr (OP == kMax) return x > y || std::isnan(x) ? x : y;
  if constexpr (OP == kMin) return x < y || std::isnan(x) ? x : y;
  if constexpr (OP == kSqDiff) return (x - y) * (x - y);
  if constexpr (OP == kPow) return std::pow(x, y);
  return 0.f;
}

// Comparisons (bool output, one byte per element as tfjs stores bool), on float32 or int32.
enum CmpOp { kLess = 16, kLessEqual, kGreater, kGreaterEqual, kEqual, kNotEqual };

template <int OP, typename T>
static inline uint8_t cmp(T x, T y) {
  if constexpr (OP == kLess) return x < y;
  if constexpr (OP == kLessEqual) return x <= y;
  if constexpr (OP == kGreater) return x > y;
  if constexpr (OP == kGreaterEqual) return x >= y;
  if constexpr (OP == kEqual) return x == y;
  if constexpr (OP == kNotEqual) return x != y;
  return 0;
}

template <int OP, typename T, typename O>
static inline O apply(T x, T y) {
  if constexpr (OP >= kLess) return cmp<OP, T>(x, y);
  else return bin<OP>(x, y);
}

// Inner loop with compile-time strides where possible (0 = broadcast, 1 = contiguous).
template <int OP, typename T, typename O>
static void binInner(const T* a, int64_t sa, const T* b, int64_t sb, O* o, int64_t n) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; i++) o[i] = apply<OP, T, O>(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T y = b[0];
    for (int64_t i = 0; i < n; i++) o[i] = apply<OP, T, O>(a[i], y);
  } else if (sa == 0 && sb == 1) {
    const T x = a[0];
    for (int64_t i = 0; i < n; i++) o[i] = apply<OP, T, O>(x, b[i]);
  } else {
    const O v = apply<OP, T, O>(a[0], b[0]);
    for (int64_t i = 0; i < n; i++) o[i] = v;
  }
}

// Collapses the broadcast into at most kMaxRank dims where adjacent dims with the same
// broadcast pattern are merged, then walks it with an odometer; the innermost dim is a flat loop.
template <int OP, typename T, typename O>
static void binRun(const T* a, const T* b, O* o, int rank, const int64_t* outS, const int64_t* aS, const int64_t* bS) {
  int64_t shp[kMaxRank], fa[kMaxRank], fb[kMaxRank];
  int n = 0;
  for (int i = 0; i < rank; i++) {
    if (outS[i] == 1) continue;
    const int64_t ba = aS[i] == 1 ? 1 : 0, bb = bS[i] == 1 ? 1 : 0;  // 1 = this input broadcasts here
    if (n > 0 && fa[n - 1] == ba && fb[n - 1] == bb) {
      shp[n - 1] *= outS[i];
    } else {
      shp[n] = outS[i];
      fa[n] = ba;
      fb[n] = bb;
      n++;
    }
  }
  if (n == 0) {
    o[0] = apply<OP, T, O>(a[0], b[0]);
    return;
  }
  int64_t sa[kMaxRank], sb[kMaxRank];
  int64_t accA = 1, accB = 1;
  for (int i = n - 1; i >= 0; i--) {
    sa[i] = fa[i] ? 0 : accA;
    sb[i] = fb[i] ? 0 : accB;
    if (!fa[i]) accA *= shp[i];
    if (!fb[i]) accB *= shp[i];
  }
  const int64_t inner = shp[n - 1];
  int64_t outer = 1;
  for (int i = 0; i < n - 1; i++) outer *= shp[i];
  if (outer == 1) {
    const int64_t ia = sa[0], ib = sb[0];
    parallelFor(inner, kGrainValues, [=](int64_t from, int64_t to) { binInner<OP, T, O>(a + from * ia, ia, b + from * ib, ib, o + from, to - from); });
    return;
  }
  parallelRows(outer, inner, [&](int64_t from, int64_t to) {
    // The odometer at row `from`: its index per collapsed dim and the matching offsets of a and b.
    int64_t idx[kMaxRank] = {0};
    int64_t ia = 0, ib = 0;
    for (int64_t d = n - 2, rest = from; d >= 0; d--) {
      idx[d] = rest % shp[d];
      rest /= shp[d];
      ia += idx[d] * sa[d];
      ib += idx[d] * sb[d];
    }
    for (int64_t k = from; k < to; k++) {
      binInner<OP, T, O>(a + ia, sa[n - 1], b + ib, sb[n - 1], o + k * inner, inner);
      for (int d = n - 2; d >= 0; d--) {
        idx[d]++;
        ia += sa[d];
        ib += sb[d];
        if (idx[d] < shp[d]) break;
        ia -= sa[d] * shp[d];
        ib -= sb[d] * shp[d];
        idx[d] = 0;
      }
    }
  });
}

// args: op aOff bOff outOff rank outShape[rank] aShape[rank] bShape[rank] isInt32
// (a/b left-padded with 1). Arithmetic ops: float32 only. Comparisons: float32 or int32 -> bool.
int binary() {
  const int op = static_cast<int>(A(0));
  const int rank = static_cast<int>(A(4));
  if (rank > kMaxRank) {
    std::snprintf(g_error, sizeof(g_error), "binary: rank %d above %d", rank, kMaxRank);
    return -2;
  }
  const bool isInt = A(5 + 3 * rank) != 0;
  int64_t outS[kMaxRank], aS[kMaxRank], bS[kMaxRank];
  for (int i = 0; i < rank; i++) {
    outS[i] = A(5 + i);
    aS[i] = A(5 + rank + i);
    bS[i] = A(5 + 2 * rank + i);
  }
  const float* a = F(g_args[1]);
  const float* b = F(g_args[2]);
  float* o = F(g_args[3]);
  const int32_t* ai = I(g_args[1]);
  const int32_t* bi = I(g_args[2]);
  uint8_t* ob = P(g_args[3]);
#define SHARP_BIN(OPC) \
  case OPC: binRun<OPC, float, float>(a, b, o, rank, outS, aS, bS); break;
#define SHARP_CMP(OPC)                                             \
  case OPC:                                                         \
    if (isInt) binRun<OPC, int32_t, uint8_t>(ai, bi, ob, rank, outS, aS, bS); \
    else binRun<OPC, float, uint8_t>(a, b, ob, rank, outS, aS, bS); \
    break;
  switch (op) {
    SHARP_BIN(kAdd) SHARP_BIN(kSub) SHARP_BIN(kMul) SHARP_BIN(kDiv) SHARP_BIN(kMax) SHARP_BIN(kMin) SHARP_BIN(kSqDiff) SHARP_BIN(kPow)
    SHARP_CMP(kLess) SHARP_CMP(kLessEqual) SHARP_CMP(kGreater) SHARP_CMP(kGreaterEqual) SHARP_CMP(kEqual) SHARP_CMP(kNotEqual)
    default:
      std::snprintf(g_error, sizeof(g_error), "binary: unknown op %d", op);
      return -2;
  }
#undef SHARP_BIN
#undef SHARP_CMP
  return 0;
}

// Unary op `op` over n values (unary() has checked it).
static void unaryRange(int op, const float* x, float* o, int64_t n) {
  switch (op) {
    case kExp: expShift(x, 0.f, o, n); break;
    case kLog: for (int64_t i = 0; i < n; i++) o[i] = std::log(x[i]); break;
    case kNeg: for (int64_t i = 0; i < n; i++) o[i] = -x[i]; break;
    case kSqrt: for (int64_t i = 0; i < n; i++) o[i] = std::sqrt(x[i]); break;
    case kRsqrt: for (int64_t i = 0; i < n; i++) o[i] = 1.f / std::sqrt(x[i]); break;
    case kSquare: for (int64_t i = 0; i < n; i++) o[i] = x[i] * x[i]; break;
    case kSigmoid: sigmoidInto(x, o, n); break;
    case kTanh: for (int64_t i = 0; i < n; i++) o[i] = std::tanh(x[i]); break;
    case kAbs: for (int64_t i = 0; i < n; i++) o[i] = std::fabs(x[i]); break;
    case kRelu: for (int64_t i = 0; i < n; i++) o[i] = x[i] > 0.f ? x[i] : (std::isnan(x[i]) ? x[i] : 0.f); break;
    case kReciprocal: for (int64_t i = 0; i < n; i++) o[i] = 1.f / x[i]; break;
    case kSin: for (int64_t i = 0; i < n; i++) o[i] = std::sin(x[i]); break;
    case kCos: for (int64_t i = 0; i < n; i++) o[i] = std::cos(x[i]); break;
    case kLog1p: for (int64_t i = 0; i < n; i++) o[i] = std::log1p(x[i]); break;
    case kSoftplus:
      // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|).
      for (int64_t i = 0; i < n; i++) o[i] = (x[i] > 0.f ? x[i] : 0.f) + std::log1p(std::exp(-std::fabs(x[i])));
      break;
    default:
      break;
  }
}

// args: op xOff outOff size
int unary() {
  const int op = static_cast<int>(A(0));
  const float* x = F(g_args[1]);
  float* o = F(g_args[2]);
  if (op < kExp || op > kSoftplus) {
    std::snprintf(g_error, sizeof(g_error), "unary: unknown op %d", op);
    return -2;
  }
  parallelFor(A(3), kGrainValues, [=](int64_t from, int64_t to) { unaryRange(op, x + from, o + from, to - from); });
  return 0;
}

// args: outOff size count inOff[count]
int addN() {
  float* o = F(g_args[0]);
  const int64_t n = A(1);
  const int count = static_cast<int>(A(2));
  std::vector<const float*> xs(static_cast<size_t>(count));
  for (int k = 0; k < count; k++) xs[static_cast<size_t>(k)] = F(g_args[3 + k]);
  const float* const* in = xs.data();
  parallelFor(n, kGrainValues, [=](int64_t from, int64_t to) {
    if (o != in[0]) std::memmove(o + from, in[0] + from, static_cast<size_t>(to - from) * sizeof(float));
    for (int k = 1; k < count; k++) {
      const float* x = in[k];
      for (int64_t i = from; i < to; i++) o[i] += x[i];
    }
  });
  return 0;
}

// Select (tf.where) with condition, t and e of the same shape (the common case; the caller
// falls back to the stock kernel otherwise). args: condOff tOff eOff outOff size.
int select() {
  const uint8_t* cond = P(g_args[0]);
  const float* t = F(g_args[1]);
  const float* e = F(g_args[2]);
  float* o = F(g_args[3]);
  parallelFor(A(4), kGrainValues, [=](int64_t from, int64_t to) {
    for (int64_t i = from; i < to; i++) o[i] = cond[i] ? t[i] : e[i];
  });
  return 0;
}

}  // namespace sharp
