// Splitting one kernel's rows or elements across the training threads: the calling thread and
// helpers that stay alive between kernels (an elementwise kernel of a train step takes 20-300 us,
// against ~50 us to start and join a thread and ~0.1 us to hand a part to a helper that is
// spinning). Parts are contiguous ranges and each index is computed by exactly one thread, so a
// kernel's values do not depend on how many threads ran it.
#pragma once
#include <cstdint>

namespace sharp {

using RangeFn = void (*)(void* ctx, int64_t from, int64_t to);

// Runs fn(ctx, from, to) over [0, n) in up to g_autoThreadsMax contiguous parts of at least
// minPerPart indices each (on this thread alone when that makes one part). Returns when every part
// has run.
void parallelRange(int64_t n, int64_t minPerPart, RangeFn fn, void* ctx);

// Indices per part that make a part worth handing over, for `perIndex` values of work per index.
constexpr int64_t kGrainValues = 1 << 14;
inline int64_t grainFor(int64_t perIndex) { return perIndex >= kGrainValues ? 1 : kGrainValues / (perIndex < 1 ? 1 : perIndex); }

template <typename Body>
void parallelFor(int64_t n, int64_t minPerPart, Body body) {
  parallelRange(n, minPerPart, [](void* c, int64_t from, int64_t to) { (*static_cast<Body*>(c))(from, to); }, &body);
}

// body(from, to) over rows [0, rows) of `cols` values each, in parts of at least kGrainValues values.
template <typename Body>
void parallelRows(int64_t rows, int64_t cols, Body body) {
  parallelFor(rows, grainFor(cols), body);
}

}  // namespace sharp
