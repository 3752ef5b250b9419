// BatchMatMul on OpenBLAS sgemm with both transpose flags and general batch broadcasting
// (numpy rules on the batch dims, as tf.matMul). Row-major throughout.
#include <cblas.h>
#include <cstdio>
#include "kernels.h"

extern "C" void openblas_set_num_threads(int);

namespace sharp {

// Rows at or below which a GEMM is a decode-step product: thread wake-ups cost more than they give.
constexpr int64_t kDecodeRows = 32;

void pickBlasThreads(int64_t rows) {
  if (g_autoThreadsMax == 0) return;
  const int want = rows <= kDecodeRows ? 1 : g_autoThreadsMax;
  if (want != g_threadsNow) {
    openblas_set_num_threads(want);
    g_threadsNow = want;
  }
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
  const int lda = ta ? static_cast<int>(M) : static_cast<int>(K);
  const int ldb = tb ? static_cast<int>(K) : static_cast<int>(N);
  const CBLAS_TRANSPOSE opA = ta ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE opB = tb ? CblasTrans : CblasNoTrans;
  if (batch == 0 || M == 0 || N == 0) return 0;
  if (K == 0) {
    for (int64_t i = 0; i < batch * M * N; i++) c[i] = 0.f;
    return 0;
  }
  // x[B, T, D] @ W[D, N]: one GEMM over all B*T rows (the weight is shared by every batch).
  const bool fold = batchB == 1 && !ta && batchA == batch;
  pickBlasThreads(fold ? batch * M : M);
  if (fold) {
    cblas_sgemm(CblasRowMajor, opA, opB, static_cast<int>(batch * M), static_cast<int>(N), static_cast<int>(K), 1.f, a,
                lda, b, ldb, 0.f, c, static_cast<int>(N));
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
  int64_t idx[kMaxRank] = {0};
  int64_t ia = 0, ib = 0;
  const int64_t szA = M * K, szB = K * N, szC = M * N;
  for (int64_t o = 0; o < batch; o++) {
    cblas_sgemm(CblasRowMajor, opA, opB, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.f, a + ia * szA,
                lda, b + ib * szB, ldb, 0.f, c + o * szC, static_cast<int>(N));
    // Odometer increment over the output batch index, keeping ia/ib in step.
    for (int d = r - 1; d >= 0; d--) {
      idx[d]++;
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < outB[d]) break;
      ia -= sa[d] * outB[d];
      ib -= sb[d] * outB[d];
      idx[d] = 0;
    }
  }
  return 0;
}

}  // namespace sharp
