// Kernels of the sharp-rl native addon. A kernel reads its arguments from one shared Float64Array
// (g_args) that JS fills before the call (one N-API transition, no argument marshalling); the slots
// that name tensors are references that P() turns into pointers, so the same kernel body serves two
// bindings without copying anything:
//  - heap binding (tfjs wasm backend): a reference is the byte offset the backend records for the
//    tensor in the wasm heap (dataIdMap memoryOffset), the pointer g_heap + offset;
//  - typed-array binding (the `native` backend, tensors in ordinary memory): a reference is the
//    index of the tensor's TypedArray among the call's arguments, the pointer its data (g_ptrs).
#pragma once
#include <cstddef>
#include <cstdint>

namespace sharp {

extern uint8_t* g_heap;     // base of the wasm memory (WebAssembly.Memory buffer)
extern double* g_args;      // shared argument block, kArgsLen doubles
constexpr int kArgsLen = 8192;
constexpr int kMaxRank = 8;

// Data pointers of the current typed-array call's arguments; null during a heap-binding call.
extern uint8_t* const* g_ptrs;

inline uint8_t* P(double ref) { return g_ptrs != nullptr ? g_ptrs[static_cast<size_t>(ref)] : g_heap + static_cast<size_t>(ref); }
inline float* F(double ref) { return reinterpret_cast<float*>(P(ref)); }
inline int32_t* I(double ref) { return reinterpret_cast<int32_t*>(P(ref)); }
inline int64_t A(int i) { return static_cast<int64_t>(g_args[i]); }

// Each returns 0 on success, or a negative code; an error message (one line) is left in g_error.
extern char g_error[256];
// Thread policy: 0 = fixed (setThreads: OpenBLAS threads each GEMM), else the most threads of the
// pool (pool.h), which every kernel, GEMMs included (matmul.cc), splits its work across.
extern int g_autoThreadsMax;
extern int g_threadsNow;
// Under the automatic policy: makes OpenBLAS run each GEMM on the calling thread (the kernels split
// their GEMMs across the pool themselves) and returns true. Under a fixed count: returns false and
// leaves OpenBLAS's threads as they are.
bool blasOnCaller();
// Row-major C[m, n] = alpha * op(A) op(B) + beta * C with explicit leading dimensions (one cblas_sgemm).
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc);

int matmul();
int binary();
int unary();
int transpose();
int slice();
int concat();
int gather();
int segmentSum();
int oneHot();
int addN();
int reduce();
int softmax();
int cumsum();
int adamw();
int select();
int cast();
int rmsNorm();
int rmsNormGrad();
int swiglu();
int swigluGrad();
int rope();
int selectedLogprobs();
int selectedLogprobsGrad();
int attnProbs();
int attnProbsGrad();
int attnApply();
int attnApplyGrad();
int kvWrite();
int bf16MatMul();
int bf16Unpack();

// Generic strided copy used by transpose (and reductions over non-inner axes).
void transposeRaw(const float* x, float* out, int rank, const int64_t* shape, const int64_t* perm, bool isFloat);

}  // namespace sharp
