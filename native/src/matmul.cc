// BatchMatMul on OpenBLAS sgemm with both transpose flags and general batch broadcasting
// (numpy rules on the batch dims, as tf.matMul). Row-major throughout.
//
// Threads: under the automatic policy (setAutoThreads) OpenBLAS runs every GEMM on the calling
// thread, and this kernel splits a GEMM across the pool (pool.h) itself, by blocks of output rows
// (of columns for a large product of a decode step's few rows) or by batch entries, each part one
// single-threaded sgemm. Every kernel of a step then runs on the same
// threads, with no second set of workers (OpenBLAS's, which busy-wait after each GEMM) competing for
// the cores with the pool's. Under a fixed count (setThreads) OpenBLAS threads each GEMM as it does.
#include <cblas.h>
#include <cstdio>
#include "kernels.h"
#include "pool.h"

extern "C" void openblas_set_num_threads(int);

namespace sharp {

namespace {

// Rows at or below which a GEMM is a decode-step product, split (by columns) only from
// kDecodeSplit multiply-adds: between decode steps the pool's helpers are often asleep.
constexpr int64_t kDecodeRows = 32;
constexpr int64_t kDecodeSplit = int64_t{1} << 22;
// Output columns per block of a decode-step split.
constexpr int64_t kColBlock = 64;
// Output rows per block of a split GEMM (a multiple of sgemm's register block on x86-64).
constexpr int64_t kRowBlock = 16;
// Multiply-adds that make a part worth handing to another thread (OpenBLAS's own threshold for
// threading a GEMM is 4 * 65536).
constexpr int64_t kGemmGrain = int64_t{1} << 18;

struct Gemm {
  bool ta, tb;
  int64_t M, N, K;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float* c;  // [M, N] with row stride N
};

// C[m0:m1, n0:n1] = op(A)[m0:m1, :] op(B)[:, n0:n1], one sgemm on this thread.
void gemmBlock(const Gemm& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const float* a = g.ta ? g.a + m0 : g.a + m0 * g.lda;  // op(A)'s row i is A's column i when transposed
  const float* b = g.tb ? g.b + n0 * g.ldb : g.b + n0;  // op(B)'s column j is B's row j when transposed
  sgemm(g.ta, g.tb, m1 - m0, n1 - n0, g.K, 1.f, a, g.lda, b, g.ldb, 0.f, g.c + m0 * g.N + n0, g.N);
}

// One GEMM, split across the pool when it is big enough: by blocks of output rows, or, for a
// decode step's few rows, by blocks of output columns once the product is large (an LM head over a
// big vocabulary), since waking a sleeping helper costs more than a small product takes.
void gemmSplit(const Gemm& g) {
  if (!blasOnCaller()) {
    gemmBlock(g, 0, g.M, 0, g.N);
    return;
  }
  if (g.M > kDecodeRows) {
    const int64_t blocks = (g.M + kRowBlock - 1) / kRowBlock;
    const int64_t perBlock = kRowBlock * g.N * g.K;
    parallelFor(blocks, perBlock >= kGemmGrain ? 1 : kGemmGrain / perBlock, [&g](int64_t from, int64_t to) {
      gemmBlock(g, from * kRowBlock, to * kRowBlock < g.M ? to * kRowBlock : g.M, 0, g.N);
    });
    return;
  }
  if (g.M * g.N * g.K < kDecodeSplit) {
    gemmBlock(g, 0, g.M, 0, g.N);
    return;
  }
  const int64_t blocks = (g.N + kColBlock - 1) / kColBlock;
  const int64_t perBlock = g.M * kColBlock * g.K;
  parallelFor(blocks, perBlock >= kGemmGrain ? 1 : kGemmGrain / perBlock, [&g](int64_t from, int64_t to) {
    gemmBlock(g, 0, g.M, from * kColBlock, to * kColBlock < g.N ? to * kColBlock : g.N);
  });
}

}  // namespace

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

bool blasOnCaller() {
  if (g_autoThreadsMax == 0) return false;
  if (g_threadsNow != 1) {
    openblas_set_num_threads(1);
    g_threadsNow = 1;
  }
  return true;
}

// args: aOff bOff outOff M N K transA transB r outBatch[r] aBatch[r] bBatch[r]
// (a/b batch dims are left-padded with 1 to rank r by the caller).
int matmul() {
  float* a = F(g_args[0]);
  float* b = F(g_args[1]);
  float* c = F(g_args[2]);
  const int64_t M = A(3), N = A(4), K = A(5);
  const bool ta = A(6) != 0, tb = A(7) != 0;
  const int r = static_cast<int>(A(8));
  if (r < 0 || r > kMaxRank) {
    std::snprintf(g_error, sizeof(g_error), "matmul: batch rank %d out of range", r);
    return -2;
  }
  int64_t outB[kMaxRank], aB[kMaxRank], bB[kMaxRank];
  int64_t batch = 1, batchA = 1, batchB = 1;
  for (int i = 0; i < r; i++) {
    outB[i] = A(9 + i);
    aB[i] = A(9 + r + i);
    bB[i] = A(9 + 2 * r + i);
    batch *= outB[i];
    batchA *= aB[i];
    batchB *= bB[i];
  }
  const int64_t lda = ta ? M : K;
  const int64_t ldb = tb ? K : N;
  if (batch == 0 || M == 0 || N == 0) return 0;
  if (K == 0) {
    for (int64_t i = 0; i < batch * M * N; i++) c[i] = 0.f;
    return 0;
  }
  // x[B, T, D] @ W[D, N]: one GEMM over all B*T rows (the weight is shared by every batch).
  if (batchB == 1 && !ta && batchA == batch) {
    gemmSplit(Gemm{ta, tb, batch * M, N, K, a, lda, b, ldb, c});
    return 0;
  }
  // Strides (in matrices) of a and b per output batch dim; 0 where that input broadcasts.
  int64_t sa[kMaxRank], sb[kMaxRank];
  int64_t accA = 1, accB = 1;
  for (int i = r - 1; i >= 0; i--) {
    sa[i] = aB[i] == 1 ? 0 : accA;
    sb[i] = bB[i] == 1 ? 0 : accB;
    accA *= aB[i];
    accB *= bB[i];
  }
  const int64_t szA = M * K, szB = K * N, szC = M * N;
  // Output batch entry o's GEMM (its a and b matrices from o's multi-index).
  auto entry = [&](int64_t o) {
    int64_t ia = 0, ib = 0;
    for (int64_t d = r - 1, rest = o; d >= 0; d--) {
      const int64_t i = rest % outB[d];
      rest /= outB[d];
      ia += i * sa[d];
      ib += i * sb[d];
    }
    return Gemm{ta, tb, M, N, K, a + ia * szA, lda, b + ib * szB, ldb, c + o * szC};
  };
  if (batch == 1) {
    gemmSplit(entry(0));
    return 0;
  }
  if (!blasOnCaller() || M * N * K >= kGemmGrain * 4) {
    // A fixed thread count (OpenBLAS threads each GEMM), or entries big enough to split by rows.
    for (int64_t o = 0; o < batch; o++) gemmSplit(entry(o));
    return 0;
  }
  // Small entries (attention heads, decode steps): whole entries per part.
  const int64_t per = M * N * K;
  parallelFor(batch, per >= kGemmGrain ? 1 : kGemmGrain / (per < 1 ? 1 : per), [&entry](int64_t from, int64_t to) {
    for (int64_t o = from; o < to; o++) {
      const Gemm g = entry(o);
      gemmBlock(g, 0, g.M, 0, g.N);
    }
  });
  return 0;
}

}  // namespace sharp
