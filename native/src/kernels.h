// Kernels of the sharp-rl native addon (issue 9). Every kernel works in place on the tfjs wasm
// backend's heap: pointers are the heap base plus the byte offsets the backend records for each
// tensor (dataIdMap memoryOffset), so nothing is copied between JS and C++.
// Integer and float arguments arrive in one shared Float64Array (g_args) that JS fills before the
// call: a call then costs one N-API transition and no argument marshalling.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sharp {

extern uint8_t* g_heap;     // base of the wasm memory (WebAssembly.Memory buffer)
extern double* g_args;      // shared argument block, kArgsLen doubles
constexpr int kArgsLen = 8192;
constexpr int kMaxRank = 8;

inline float* F(double off) { return reinterpret_cast<float*>(g_heap + static_cast<size_t>(off)); }
inline int32_t* I(double off) { return reinterpret_cast<int32_t*>(g_heap + static_cast<size_t>(off)); }
inline int64_t A(int i) { return static_cast<int64_t>(g_args[i]); }

// Each returns 0 on success, or a negative code; an error message (one line) is left in g_error.
extern char g_error[256];
// BLAS thread policy: 0 = fixed (setThreads), else the most threads a GEMM may use; GEMMs with few
// rows (decoding: batch x 1 token) then run on 1 thread (issue 9, item 5).
extern int g_autoThreadsMax;
extern int g_threadsNow;
#ifdef SHARP_PORTABLE
// The prebuilt binary (x86-64 baseline) also carries the exp loops built for AVX2+FMA
// (native/prebuild/exp-avx2.cc), used when the CPU has both (g_avx2, set at load).
extern bool g_avx2;
void expShiftAvx2(const float* x, float shift, float* o, int64_t n);  // o = exp(x - shift)
void sigmoidAvx2(const float* x, float* o, int64_t n);
#endif

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
int adamw();
int select();
int cast();

// Generic strided copy used by transpose (and reductions over non-inner axes).
void transposeRaw(const float* x, float* out, int rank, const int64_t* shape, const int64_t* perm, bool isFloat);

}  // namespace sharp
