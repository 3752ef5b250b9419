// The decoder's self-attention (training, scoring, prefill, and decode steps against the KV cache)
// as two kernels and their gradients, reading q [B, T, H, hd] and k, v as [B, Tk, KV, hd] where the
// projections left them, or as the cache [B*KV, Tk, hd] (or the first Tk columns of a preallocated
// [B*KV, cap, hd] buffer, which kvWrite fills in place), and writing the context as [B, T, H, hd]:
// each head's products are strided GEMMs (leading dimension H*hd, KV*hd or hd), so no head is ever
// transposed into place. A single query row (a decode step) is dot products and a weighted sum
// instead: an sgemm call per head costs more than that row's arithmetic. Grouped-query heads share
// their kv head (h / (H / KV)) without a repeated copy.
//  - probs: P = softmax(scale * Q K^T + bias) per (b, h), bias [B, T, Tk] (0 or -1e9: causality and
//    padding, src/model/attention.ts); its backward dS = P * (dP - rowsum(dP * P)),
//    dQ = scale * dS K, dK = scale * sum over the group's heads of dS^T Q;
//  - apply: ctx = P V per (b, h); its backward dP = dctx V^T, dV = sum over the group of P^T dctx.
// Heads run in parallel on the pool (pool.h) with single-threaded GEMMs; a gradient summed over a
// group of heads is made by one thread in head order, so values do not depend on the thread count.
#include <cstdio>
#include <cstring>
#include <vector>

#include "exp-loops.h"
#include "kernels.h"
#include "pool.h"

namespace sharp {

namespace {

struct Dims {
  int64_t B, T, Tk, H, KV, hd;
  bool cache;  // k and v are a KV cache [B*KV, Tk, hd] rather than [B, Tk, KV, hd]
  int64_t cap;  // columns per kv head of a cache: Tk, or a preallocated buffer's capacity (>= Tk) whose first Tk are read
  int64_t rep() const { return H / KV; }
  int64_t kvRow() const { return cache ? hd : KV * hd; }  // row stride of k and v
};

// Dims from argument slots [at, at + 7): B T Tk H KV hd cache; false (and g_error) when inconsistent.
bool readDims(int at, const char* name, Dims* d) {
  *d = Dims{A(at), A(at + 1), A(at + 2), A(at + 3), A(at + 4), A(at + 5), A(at + 6) != 0, A(at + 2)};
  if (d->B < 0 || d->T < 0 || d->Tk < 0 || d->H < 1 || d->KV < 1 || d->hd < 0 || d->H % d->KV != 0) {
    std::snprintf(g_error, sizeof(g_error), "%s: bad dims B=%lld T=%lld Tk=%lld H=%lld KV=%lld hd=%lld", name, static_cast<long long>(d->B),
                  static_cast<long long>(d->T), static_cast<long long>(d->Tk), static_cast<long long>(d->H), static_cast<long long>(d->KV),
                  static_cast<long long>(d->hd));
    return false;
  }
  return true;
}

// The capacity slot of the forward kernels (0: the cache is exactly Tk wide); false (and g_error) when
// it is below Tk or the keys are not a cache.
bool readCap(int at, const char* name, Dims* d) {
  const int64_t cap = A(at);
  if (cap == 0) return true;
  if (!d->cache || cap < d->Tk) {
    std::snprintf(g_error, sizeof(g_error), "%s: a capacity of %lld columns needs a KV cache at least Tk=%lld wide", name, static_cast<long long>(cap),
                  static_cast<long long>(d->Tk));
    return false;
  }
  d->cap = cap;
  return true;
}

// Head (b, h)'s [T, hd] block of a [B, T, H, hd] tensor (row stride H*hd) and kv head (b, kv)'s
// [Tk, hd] block of a [B, Tk, KV, hd] one (row stride KV*hd) or of a cache [B*KV, cap, hd] (row stride hd).
inline int64_t qAt(const Dims& d, int64_t b, int64_t h) { return (b * d.T * d.H + h) * d.hd; }
inline int64_t kvAt(const Dims& d, int64_t b, int64_t kv) { return d.cache ? (b * d.KV + kv) * d.cap * d.hd : (b * d.Tk * d.KV + kv) * d.hd; }

// Heads (or kv heads) per part: a part is worth handing over from about kGrainValues multiply-adds.
// A decode step (T = 1) stays on the calling thread below kDecodeSplitValues multiply-adds in all:
// its other kernels are too small to split, so the helpers are asleep and waking them costs more.
constexpr int64_t kDecodeSplitValues = int64_t{1} << 20;
int64_t headGrain(const Dims& d) {
  const int64_t per = d.T * d.Tk * (d.hd > 0 ? d.hd : 1);
  if (d.T == 1 && per * d.B * d.H < kDecodeSplitValues) return d.B * d.H;
  return grainFor(per);
}

// o[j] = alpha * (q . k_j) for the Tk rows of k (row stride ldk): one query row's scores.
void scoresRow(const float* q, const float* k, int64_t ldk, int64_t tk, int64_t hd, float alpha, float* o) {
  for (int64_t j = 0; j < tk; j++) {
    const float* kj = k + j * ldk;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= hd; i += 8)
      for (int u = 0; u < 8; u++) acc[u] += q[i + u] * kj[i + u];
    for (int u = 0; i < hd; i++, u++) acc[u] += q[i] * kj[i];
    o[j] = alpha * (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
  }
}

// o = sum_j p[j] v_j over the Tk rows of v (row stride ldv): one query row's context.
void mixRow(const float* p, const float* v, int64_t ldv, int64_t tk, int64_t hd, float* o) {
  for (int64_t i = 0; i < hd; i++) o[i] = 0.f;
  for (int64_t j = 0; j < tk; j++) {
    const float pj = p[j];
    const float* vj = v + j * ldv;
    for (int64_t i = 0; i < hd; i++) o[i] += pj * vj[i];
  }
}

// dS = P * (dP - rowsum(dP * P)) of one head's [T, Tk] block (row sums in double).
void softmaxBackward(const float* dp, const float* p, float* ds, int64_t rows, int64_t cols) {
  for (int64_t t = 0; t < rows; t++) {
    const float* dpr = dp + t * cols;
    const float* pr = p + t * cols;
    double dot = 0;
    for (int64_t i = 0; i < cols; i++) dot += static_cast<double>(dpr[i]) * pr[i];
    const float s = static_cast<float>(dot);
    float* o = ds + t * cols;
    for (int64_t i = 0; i < cols; i++) o[i] = pr[i] * (dpr[i] - s);
  }
}

// out[b, :, kv, :] = alpha * sum over kv head kv's group of op(M_bh)^T Y_bh, for every (b, kv): the
// [Tk, hd] blocks of a gradient in the keys' (or values') layout from the [T, Tk] matrix
// `left(bh, scratch)` of each query head and its [T, hd] block of y [B, T, H, hd]. One thread per
// kv head, the group's heads in order.
template <typename Left>
void groupSum(const Dims& d, float alpha, const float* y, float* out, Left left) {
  parallelFor(d.B * d.KV, headGrain(d), [=](int64_t from, int64_t to) {
    std::vector<float> scratch(static_cast<size_t>(d.T * d.Tk));
    for (int64_t bkv = from; bkv < to; bkv++) {
      const int64_t b = bkv / d.KV, kv = bkv % d.KV;
      float* o = out + kvAt(d, b, kv);
      if (d.T == 0) {
        for (int64_t j = 0; j < d.Tk; j++)
          for (int64_t i = 0; i < d.hd; i++) o[j * d.kvRow() + i] = 0.f;
        continue;
      }
      for (int64_t r = 0; r < d.rep(); r++) {
        const int64_t h = kv * d.rep() + r;
        sgemm(true, false, d.Tk, d.hd, d.T, alpha, left(b * d.H + h, scratch.data()), d.Tk, y + qAt(d, b, h), d.H * d.hd, r == 0 ? 0.f : 1.f, o, d.kvRow());
      }
    }
  });
}

}  // namespace

// args: qRef kRef biasRef pRef B T Tk H KV hd cache scale cap -> P [B, H, T, Tk]
int attnProbs() {
  const float* q = F(g_args[0]);
  const float* k = F(g_args[1]);
  const float* bias = F(g_args[2]);
  float* p = F(g_args[3]);
  Dims d;
  if (!readDims(4, "attnProbs", &d) || !readCap(12, "attnProbs", &d)) return -2;
  const float scale = static_cast<float>(g_args[11]);
  blasOnCaller();
  parallelFor(d.B * d.H, headGrain(d), [=](int64_t from, int64_t to) {
    for (int64_t bh = from; bh < to; bh++) {
      const int64_t b = bh / d.H, h = bh % d.H;
      float* pb = p + bh * d.T * d.Tk;
      if (d.T == 1)
        scoresRow(q + qAt(d, b, h), k + kvAt(d, b, h / d.rep()), d.kvRow(), d.Tk, d.hd, scale, pb);
      else
        sgemm(false, true, d.T, d.Tk, d.hd, scale, q + qAt(d, b, h), d.H * d.hd, k + kvAt(d, b, h / d.rep()), d.kvRow(), 0.f, pb, d.Tk);
      const float* bb = bias + b * d.T * d.Tk;
      for (int64_t t = 0; t < d.T; t++) {
        float* row = pb + t * d.Tk;
        const float* br = bb + t * d.Tk;
        for (int64_t i = 0; i < d.Tk; i++) row[i] += br[i];
        softmaxRow(row, row, d.Tk);
      }
    }
  });
  return 0;
}

// part 0: dQ [B, T, H, hd]; part 1: dK in k's layout.
// args: dpRef pRef qRef kRef outRef B T Tk H KV hd cache scale part
int attnProbsGrad() {
  const float* dp = F(g_args[0]);
  const float* p = F(g_args[1]);
  const float* q = F(g_args[2]);
  const float* k = F(g_args[3]);
  float* out = F(g_args[4]);
  Dims d;
  if (!readDims(5, "attnProbsGrad", &d)) return -2;
  const float scale = static_cast<float>(g_args[12]);
  const int64_t block = d.T * d.Tk;
  blasOnCaller();
  if (A(13) == 0) {
    parallelFor(d.B * d.H, headGrain(d), [=](int64_t from, int64_t to) {
      std::vector<float> ds(static_cast<size_t>(block));
      for (int64_t bh = from; bh < to; bh++) {
        const int64_t b = bh / d.H, h = bh % d.H;
        softmaxBackward(dp + bh * block, p + bh * block, ds.data(), d.T, d.Tk);
        sgemm(false, false, d.T, d.hd, d.Tk, scale, ds.data(), d.Tk, k + kvAt(d, b, h / d.rep()), d.kvRow(), 0.f, out + qAt(d, b, h), d.H * d.hd);
      }
    });
    return 0;
  }
  groupSum(d, scale, q, out, [=](int64_t bh, float* ds) {
    softmaxBackward(dp + bh * block, p + bh * block, ds, d.T, d.Tk);
    return static_cast<const float*>(ds);
  });
  return 0;
}

// args: pRef vRef outRef B T Tk H KV hd cache cap -> ctx [B, T, H, hd]
int attnApply() {
  const float* p = F(g_args[0]);
  const float* v = F(g_args[1]);
  float* out = F(g_args[2]);
  Dims d;
  if (!readDims(3, "attnApply", &d) || !readCap(10, "attnApply", &d)) return -2;
  blasOnCaller();
  parallelFor(d.B * d.H, headGrain(d), [=](int64_t from, int64_t to) {
    for (int64_t bh = from; bh < to; bh++) {
      const int64_t b = bh / d.H, h = bh % d.H;
      if (d.T == 1)
        mixRow(p + bh * d.Tk, v + kvAt(d, b, h / d.rep()), d.kvRow(), d.Tk, d.hd, out + qAt(d, b, h));
      else
        sgemm(false, false, d.T, d.hd, d.Tk, 1.f, p + bh * d.T * d.Tk, d.Tk, v + kvAt(d, b, h / d.rep()), d.kvRow(), 0.f, out + qAt(d, b, h), d.H * d.hd);
    }
  });
  return 0;
}

// part 0: dP [B, H, T, Tk]; part 1: dV in v's layout.
// args: dyRef pRef vRef outRef B T Tk H KV hd cache part
int attnApplyGrad() {
  const float* dy = F(g_args[0]);
  const float* p = F(g_args[1]);
  const float* v = F(g_args[2]);
  float* out = F(g_args[3]);
  Dims d;
  if (!readDims(4, "attnApplyGrad", &d)) return -2;
  const int64_t block = d.T * d.Tk;
  blasOnCaller();
  if (A(11) == 0) {
    parallelFor(d.B * d.H, headGrain(d), [=](int64_t from, int64_t to) {
      for (int64_t bh = from; bh < to; bh++) {
        const int64_t b = bh / d.H, h = bh % d.H;
        sgemm(false, true, d.T, d.Tk, d.hd, 1.f, dy + qAt(d, b, h), d.H * d.hd, v + kvAt(d, b, h / d.rep()), d.kvRow(), 0.f, out + bh * block, d.Tk);
      }
    });
    return 0;
  }
  groupSum(d, 1.f, dy, out, [=](int64_t bh, float*) { return p + bh * block; });
  return 0;
}

// Writes x [N, n, hd] into columns [at, at + n) of the buffer [N, cap, hd], in place: a decode step's
// new keys or values into a preallocated KV cache (src/generation/kv-cache.ts).
// args: bufRef xRef N cap n at hd
int kvWrite() {
  float* buf = F(g_args[0]);
  const float* x = F(g_args[1]);
  const int64_t N = A(2), cap = A(3), n = A(4), at = A(5), hd = A(6);
  if (N < 0 || n < 0 || hd < 0 || at < 0 || at + n > cap) {
    std::snprintf(g_error, sizeof(g_error), "kvWrite: columns [%lld, %lld) do not fit a capacity of %lld", static_cast<long long>(at),
                  static_cast<long long>(at + n), static_cast<long long>(cap));
    return -2;
  }
  const size_t bytes = static_cast<size_t>(n * hd) * sizeof(float);
  for (int64_t r = 0; r < N; r++) std::memcpy(buf + (r * cap + at) * hd, x + r * n * hd, bytes);
  return 0;
}

}  // namespace sharp
