// The helper threads of parallelRange (pool.h). One generation word says what to do: a counter
// bumped per call and the call's part count, so a helper reads both in one atomic load and takes
// part `index` of that call only when index < parts. The caller writes the call (fn, ctx, n)
// before the bump and changes it again only after every part has finished, so a helper reading it
// under a generation it takes part in sees that call. Helpers spin a while after each part (the
// next kernel of a step usually comes within microseconds), then sleep on a condition variable;
// they are detached and the pool is never freed, so process exit never waits on them or destroys
// state they use.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sched.h>
#include <thread>

#include "kernels.h"
#include "pool.h"

namespace sharp {

namespace {

constexpr int kMaxHelpers = 63;
constexpr auto kSpinFor = std::chrono::microseconds(200);

struct Pool {
  std::atomic<uint64_t> gen{0};  // counter << 8 | parts
  std::atomic<int> pending{0};   // parts of the current call not yet finished (helpers' parts)
  std::atomic<int> sleepers{0};
  std::mutex m;
  std::condition_variable cv;
  RangeFn fn = nullptr;
  void* ctx = nullptr;
  int64_t n = 0;
  int helpers = 0;  // started so far (only the calling thread starts them)
};

Pool* pool() {
  static Pool* p = new Pool();  // never deleted: detached helpers may outlive static destruction
  return p;
}

void runPart(Pool* p, int part, int parts) {
  const int64_t from = p->n * part / parts, to = p->n * (part + 1) / parts;
  p->fn(p->ctx, from, to);
}

void helperLoop(Pool* p, int index, uint64_t seen) {
  for (;;) {
    uint64_t g = p->gen.load(std::memory_order_acquire);
    const auto t0 = std::chrono::steady_clock::now();
    for (int spins = 0; g == seen; g = p->gen.load(std::memory_order_acquire)) {
      if (++spins % 256 != 0) continue;
      if (std::chrono::steady_clock::now() - t0 < kSpinFor) {
        sched_yield();
        continue;
      }
      std::unique_lock<std::mutex> lock(p->m);
      p->sleepers.fetch_add(1);
      while ((g = p->gen.load()) == seen) p->cv.wait(lock);
      p->sleepers.fetch_sub(1);
      break;
    }
    seen = g;
    const int parts = static_cast<int>(g & 0xff);
    if (index >= parts) continue;
    runPart(p, index, parts);
    p->pending.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace

void parallelRange(int64_t n, int64_t minPerPart, RangeFn fn, void* ctx) {
  const int64_t threads = g_autoThreadsMax > 1 ? (g_autoThreadsMax > kMaxHelpers + 1 ? kMaxHelpers + 1 : g_autoThreadsMax) : 1;
  const int64_t most = minPerPart < 1 ? n : n / minPerPart;
  const int parts = static_cast<int>(most < threads ? most : threads);
  if (parts <= 1) {
    if (n > 0) fn(ctx, 0, n);
    return;
  }
  Pool* p = pool();
  while (p->helpers < parts - 1) {
    std::thread(helperLoop, p, p->helpers + 1, p->gen.load()).detach();
    p->helpers++;
  }
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  p->pending.store(parts - 1, std::memory_order_relaxed);
  p->gen.store(((p->gen.load() >> 8) + 1) << 8 | static_cast<uint64_t>(parts));  // seq_cst: pairs with the sleepers check
  if (p->sleepers.load() > 0) {
    std::lock_guard<std::mutex> lock(p->m);
    p->cv.notify_all();
  }
  runPart(p, 0, parts);
  for (int spins = 1; p->pending.load(std::memory_order_acquire) > 0; spins++) {
    if (spins % 256 == 0) sched_yield();  // a helper descheduled on a busy machine gets the core
  }
}

}  // namespace sharp
