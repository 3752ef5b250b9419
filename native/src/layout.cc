// Data-movement kernels: Transpose, Slice, Concat, GatherV2, UnsortedSegmentSum (gather's
// gradient, which the wasm backend does not register), OneHot. Element size is 4 bytes for
// every dtype they move (float32 and int32), so they are dtype-agnostic copies.
#include <cblas.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include "kernels.h"

namespace sharp {

// Merges input dims that stay adjacent and in order under perm, so [B,T,H,D]->[B,H,T,D] becomes a
// rank-4 walk whose innermost D floats are one memcpy.
void transposeRaw(const float* x, float* out, int rank, const int64_t* shape, const int64_t* perm, bool isFloat) {
  int64_t cs[kMaxRank], cp[kMaxRank];  // collapsed shape (input order) and perm
  int map[kMaxRank];                    // input dim -> collapsed input dim
  // Drop size-1 dims first (they do not move data).
  int64_t s1[kMaxRank], p1[kMaxRank];
  int keep[kMaxRank], nk = 0, newIdx[kMaxRank];
  for (int i = 0; i < rank; i++) {
    if (shape[i] != 1) {
      newIdx[i] = nk;
      keep[nk++] = i;
    } else {
      newIdx[i] = -1;
    }
  }
  for (int i = 0; i < nk; i++) s1[i] = shape[keep[i]];
  int np = 0;
  for (int i = 0; i < rank; i++)
    if (newIdx[perm[i]] >= 0) p1[np++] = newIdx[perm[i]];
  int64_t total = 1;
  for (int i = 0; i < nk; i++) total *= s1[i];
  if (nk == 0) {
    out[0] = x[0];
    return;
  }
  // Collapse runs p1[j], p1[j+1] = p1[j]+1.
  int n = 0;
  int64_t groupStart[kMaxRank];
  int64_t gp[kMaxRank];
  {
    int j = 0;
    while (j < nk) {
      int k = j;
      while (k + 1 < nk && p1[k + 1] == p1[k] + 1) k++;
      groupStart[n] = p1[j];
      gp[n] = k - j + 1;  // group length
      n++;
      j = k + 1;
    }
  }
  // Groups in output order; their input order is by groupStart.
  int order[kMaxRank];
  for (int g = 0; g < n; g++) order[g] = g;
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++)
      if (groupStart[order[b]] < groupStart[order[a]]) {
        int t = order[a];
        order[a] = order[b];
        order[b] = t;
      }
  // Collapsed input shape in input order; cp = output position -> collapsed input dim.
  for (int ii = 0; ii < n; ii++) {
    int g = order[ii];
    int64_t sz = 1;
    for (int64_t d = groupStart[g]; d < groupStart[g] + gp[g]; d++) sz *= s1[d];
    cs[ii] = sz;
    map[g] = ii;
  }
  for (int g = 0; g < n; g++) cp[g] = map[g];
  if (n == 1) {
    std::memcpy(out, x, static_cast<size_t>(total) * sizeof(float));
    return;
  }
  // Float matrices (and batches of them): OpenBLAS's blocked out-of-place transpose. Not for int32
  // data, whose bit patterns must not pass through a float multiply.
  if (isFloat && ((n == 2 && cp[0] == 1) || (n == 3 && cp[0] == 0 && cp[1] == 2))) {
    const int64_t batch = n == 3 ? cs[0] : 1, rows = cs[n - 2], cols = cs[n - 1];
    for (int64_t b = 0; b < batch; b++)
      cblas_somatcopy(CblasRowMajor, CblasTrans, static_cast<blasint>(rows), static_cast<blasint>(cols), 1.f, x + b * rows * cols,
                      static_cast<blasint>(cols), out + b * rows * cols, static_cast<blasint>(rows));
    return;
  }
  int64_t inStride[kMaxRank];
  {
    int64_t acc = 1;
    for (int i = n - 1; i >= 0; i--) {
      inStride[i] = acc;
      acc *= cs[i];
    }
  }
  int64_t os[kMaxRank], st[kMaxRank];  // output shape and matching input strides
  for (int j = 0; j < n; j++) {
    os[j] = cs[cp[j]];
    st[j] = inStride[cp[j]];
  }
  const int64_t inner = os[n - 1];
  const int64_t innerStride = st[n - 1];
  int64_t outer = total / inner;
  int64_t idx[kMaxRank] = {0};
  int64_t src = 0;
  float* dst = out;
  if (innerStride == 1) {
    for (int64_t k = 0; k < outer; k++) {
      std::memcpy(dst, x + src, static_cast<size_t>(inner) * sizeof(float));
      dst += inner;
      for (int d = n - 2; d >= 0; d--) {
        idx[d]++;
        src += st[d];
        if (idx[d] < os[d]) break;
        src -= st[d] * os[d];
        idx[d] = 0;
      }
    }
    return;
  }
  // Innermost output dim is strided in the input: 2-D-style tiles of 16 keep the reads in cache
  // when the second-innermost output dim is the contiguous input one.
  if (n >= 2 && st[n - 2] == 1) {
    const int64_t rows = os[n - 2];
    const int64_t rowStride = st[n - 1];
    int64_t outer2 = outer / rows;
    int64_t src2 = 0;
    int64_t idx2[kMaxRank] = {0};
    for (int64_t k = 0; k < outer2; k++) {
      for (int64_t r0 = 0; r0 < rows; r0 += 16)
        for (int64_t c0 = 0; c0 < inner; c0 += 16) {
          const int64_t r1 = r0 + 16 < rows ? r0 + 16 : rows, c1 = c0 + 16 < inner ? c0 + 16 : inner;
          for (int64_t r = r0; r < r1; r++)
            for (int64_t c = c0; c < c1; c++) dst[r * inner + c] = x[src2 + r + c * rowStride];
        }
      dst += rows * inner;
      for (int d = n - 3; d >= 0; d--) {
        idx2[d]++;
        src2 += st[d];
        if (idx2[d] < os[d]) break;
        src2 -= st[d] * os[d];
        idx2[d] = 0;
      }
    }
    return;
  }
  for (int64_t k = 0; k < outer; k++) {
    for (int64_t i = 0; i < inner; i++) dst[i] = x[src + i * innerStride];
    dst += inner;
    for (int d = n - 2; d >= 0; d--) {
      idx[d]++;
      src += st[d];
      if (idx[d] < os[d]) break;
      src -= st[d] * os[d];
      idx[d] = 0;
    }
  }
}

// args: xOff outOff rank shape[rank] perm[rank] isFloat32
int transpose() {
  const int rank = static_cast<int>(A(2));
  if (rank > kMaxRank) {
    std::snprintf(g_error, sizeof(g_error), "transpose: rank %d above %d", rank, kMaxRank);
    return -2;
  }
  int64_t shape[kMaxRank], perm[kMaxRank];
  for (int i = 0; i < rank; i++) {
    shape[i] = A(3 + i);
    perm[i] = A(3 + rank + i);
  }
  transposeRaw(F(g_args[0]), F(g_args[1]), rank, shape, perm, A(3 + 2 * rank) != 0);
  return 0;
}

// args: xOff outOff rank shape[rank] begin[rank] size[rank]
int slice() {
  const float* x = F(g_args[0]);
  float* o = F(g_args[1]);
  const int rank = static_cast<int>(A(2));
  if (rank > kMaxRank || rank < 1) {
    std::snprintf(g_error, sizeof(g_error), "slice: rank %d out of range", rank);
    return -2;
  }
  int64_t shape[kMaxRank] = {0}, begin[kMaxRank] = {0}, size[kMaxRank] = {0}, stride[kMaxRank] = {0};
  for (int i = 0; i < rank; i++) {
    shape[i] = A(3 + i);
    begin[i] = A(3 + rank + i);
    size[i] = A(3 + 2 * rank + i);
  }
  int64_t acc = 1;
  for (int i = rank - 1; i >= 0; i--) {
    stride[i] = acc;
    acc *= shape[i];
  }
  // Innermost contiguous run: trailing dims taken whole join the last partial dim.
  int last = rank - 1;
  int64_t run = size[last];
  while (last > 0 && size[last] == shape[last]) {
    last--;
    run *= size[last];
  }
  int64_t base = 0;
  for (int i = 0; i < rank; i++) base += begin[i] * stride[i];
  int64_t outer = 1;
  for (int i = 0; i < last; i++) outer *= size[i];
  if (run == 0 || outer == 0) return 0;
  int64_t idx[kMaxRank] = {0};
  int64_t src = base;
  for (int64_t k = 0; k < outer; k++) {
    std::memcpy(o + k * run, x + src, static_cast<size_t>(run) * sizeof(float));
    for (int d = last - 1; d >= 0; d--) {
      idx[d]++;
      src += stride[d];
      if (idx[d] < size[d]) break;
      src -= stride[d] * size[d];
      idx[d] = 0;
    }
  }
  return 0;
}

// args: outOff outer count (inOff, inner)[count]  -- each input is [outer, inner_i] flattened
int concat() {
  float* o = F(g_args[0]);
  const int64_t outer = A(1);
  const int count = static_cast<int>(A(2));
  int64_t rowLen = 0;
  for (int k = 0; k < count; k++) rowLen += A(4 + 2 * k);
  for (int64_t r = 0; r < outer; r++) {
    float* dst = o + r * rowLen;
    for (int k = 0; k < count; k++) {
      const int64_t inner = A(4 + 2 * k);
      std::memcpy(dst, F(g_args[3 + 2 * k]) + r * inner, static_cast<size_t>(inner) * sizeof(float));
      dst += inner;
    }
  }
  return 0;
}

// x viewed as [outer, axisLen, inner]; indices int32 [n]; out [outer, n, inner].
// args: xOff idxOff outOff outer axisLen inner n
int gather() {
  const float* x = F(g_args[0]);
  const int32_t* ids = I(g_args[1]);
  float* o = F(g_args[2]);
  const int64_t outer = A(3), axisLen = A(4), inner = A(5), n = A(6);
  for (int64_t j = 0; j < n; j++) {
    if (ids[j] < 0 || ids[j] >= axisLen) {
      std::snprintf(g_error, sizeof(g_error), "GatherV2: index %d at position %lld is outside [0, %lld)", ids[j],
                    static_cast<long long>(j), static_cast<long long>(axisLen));
      return -3;
    }
  }
  for (int64_t r = 0; r < outer; r++)
    for (int64_t j = 0; j < n; j++)
      std::memcpy(o + (r * n + j) * inner, x + (r * axisLen + ids[j]) * inner, static_cast<size_t>(inner) * sizeof(float));
  return 0;
}

// out[numSegments, inner] = sum over j with ids[j] = s of x[j, :]; ids outside [0, numSegments) are
// dropped (TensorFlow semantics). args: xOff idxOff outOff n inner numSegments
int segmentSum() {
  const float* x = F(g_args[0]);
  const int32_t* ids = I(g_args[1]);
  float* o = F(g_args[2]);
  const int64_t n = A(3), inner = A(4), segs = A(5);
  std::memset(o, 0, static_cast<size_t>(segs * inner) * sizeof(float));
  for (int64_t j = 0; j < n; j++) {
    const int64_t s = ids[j];
    if (s < 0 || s >= segs) continue;
    float* dst = o + s * inner;
    const float* src = x + j * inner;
    for (int64_t i = 0; i < inner; i++) dst[i] += src[i];
  }
  return 0;
}

// Cast between float32 (0), int32 (1) and bool (2), tfjs semantics: float -> int truncates toward
// zero (NaN -> 0, wrapping like JS ToInt32), anything -> bool is x != 0.
// args: xOff outOff n from to
static inline int32_t toInt32(float v) {
  if (!(v == v)) return 0;
  if (v > -2147483648.f && v < 2147483648.f) return static_cast<int32_t>(v);
  const double m = std::fmod(std::trunc(static_cast<double>(v)), 4294967296.0);
  const double w = m < 0 ? m + 4294967296.0 : m;
  return static_cast<int32_t>(static_cast<uint32_t>(w));
}

int cast() {
  const int64_t n = A(2);
  const int from = static_cast<int>(A(3)), to = static_cast<int>(A(4));
  uint8_t* xb = P(g_args[0]);
  uint8_t* ob = P(g_args[1]);
  const float* xf = reinterpret_cast<const float*>(xb);
  const int32_t* xi = reinterpret_cast<const int32_t*>(xb);
  float* of = reinterpret_cast<float*>(ob);
  int32_t* oi = reinterpret_cast<int32_t*>(ob);
  if (from == to) {
    std::memmove(ob, xb, static_cast<size_t>(n) * (from == 2 ? 1 : 4));
  } else if (from == 0 && to == 1) {
    for (int64_t i = 0; i < n; i++) oi[i] = toInt32(xf[i]);
  } else if (from == 1 && to == 0) {
    for (int64_t i = 0; i < n; i++) of[i] = static_cast<float>(xi[i]);
  } else if (from == 2 && to == 0) {
    for (int64_t i = 0; i < n; i++) of[i] = xb[i] ? 1.f : 0.f;
  } else if (from == 2 && to == 1) {
    for (int64_t i = 0; i < n; i++) oi[i] = xb[i] ? 1 : 0;
  } else if (from == 0 && to == 2) {
    for (int64_t i = 0; i < n; i++) ob[i] = xf[i] != 0.f;
  } else if (from == 1 && to == 2) {
    for (int64_t i = 0; i < n; i++) ob[i] = xi[i] != 0;
  } else {
    std::snprintf(g_error, sizeof(g_error), "cast: unsupported dtype codes %d -> %d", from, to);
    return -2;
  }
  return 0;
}

// args: idxOff outOff n depth onValue offValue isInt32
int oneHot() {
  const int32_t* ids = I(g_args[0]);
  const int64_t n = A(2), depth = A(3);
  if (A(6) != 0) {
    int32_t* o = I(g_args[1]);
    const int32_t on = static_cast<int32_t>(g_args[4]), off = static_cast<int32_t>(g_args[5]);
    for (int64_t j = 0; j < n; j++) {
      int32_t* row = o + j * depth;
      for (int64_t i = 0; i < depth; i++) row[i] = off;
      if (ids[j] >= 0 && ids[j] < depth) row[ids[j]] = on;
    }
    return 0;
  }
  float* o = F(g_args[1]);
  const float on = static_cast<float>(g_args[4]), off = static_cast<float>(g_args[5]);
  for (int64_t j = 0; j < n; j++) {
    float* row = o + j * depth;
    for (int64_t i = 0; i < depth; i++) row[i] = off;
    if (ids[j] >= 0 && ids[j] < depth) row[ids[j]] = on;
  }
  return 0;
}

}  // namespace sharp
