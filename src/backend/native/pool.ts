/**
 * Recycles the buffers of the `native` backend's kernel outputs. A fresh large ArrayBuffer costs a
 * zero-fill and a page fault per 4 KiB on first touch, and is freed only when V8 collects it; the
 * wasm heap reuses warm memory instead, which made every output of the native kernels 2-10x slower
 * than the same kernel on wasm (bench model: 4 MB logits-sized outputs, ~2 ms each). The kernels
 * write every element of their outputs, so a recycled buffer needs no clearing; an output views the
 * first bytes of a buffer of its size class.
 *
 * A buffer is recycled only when nothing else can still see it: it was made here (`take`), its
 * tensor's data was deleted (refCount 0), and no other tensor was ever stored on it (a JS kernel
 * of tfjs-backend-cpu may store a view of an input, e.g. a simple Slice's `subarray`: `pin` then
 * takes the buffer out of the scheme and V8 frees it as usual).
 */
import { totalmem } from 'node:os';

/**
 * Eight size classes per power of two (at most 12.5 % unused), so tensors whose sizes differ a
 * little (sequence lengths that vary from micro-batch to micro-batch) share buffers.
 */
export function sizeClass(bytes: number): number {
  if (bytes <= 64) return 64;
  // 2^(floor(log2 bytes) - 3)
  const step = bytes < 2 ** 31 ? 1 << (28 - Math.clz32(bytes)) : 2 ** (Math.floor(Math.log2(bytes)) - 3);
  return Math.ceil(bytes / step) * step;
}

export class ArrayPool {
  private readonly free = new Map<number, ArrayBuffer[]>();
  private readonly owned = new WeakSet<ArrayBuffer>();
  private pooledBytes = 0;
  /** Hits and misses of `take` (tests and doctor). */
  readonly stats = { hits: 0, misses: 0, evicted: 0 };
  /** When each size class was last taken or given (a counter), for eviction. */
  private readonly used = new Map<number, number>();
  private clock = 0;

  /**
   * `maxBytes`: the most the free lists hold; `largest`: the biggest buffer pooled. Beyond either a
   * returned buffer is left to V8: a real-size model's logits-sized buffers (190 MB for Qwen3's
   * vocabulary) cost less to fault in than to keep. Qwen3-0.6B's shape with 6 layers: a GRPO update
   * took 49 s with no pool against 108-132 s with 3 GiB of free buffers held, at 13.5 against
   * 14.7 GiB peak RSS, on a machine with 15 GiB available (memory reclaim).
   */
  constructor(
    readonly maxBytes = Math.min(2 ** 30, totalmem() / 16),
    readonly minBytes = 64,
    readonly largest = 64 * 2 ** 20,
  ) {}

  /** A buffer of at least `bytes` bytes (its size class), contents undefined. */
  take(bytes: number): ArrayBuffer {
    if (bytes < this.minBytes || bytes > this.largest) return new ArrayBuffer(bytes);
    const size = sizeClass(bytes);
    this.used.set(size, ++this.clock);
    const buf = this.free.get(size)?.pop();
    if (buf) {
      this.pooledBytes -= size;
      this.stats.hits++;
      return buf;
    }
    this.stats.misses++;
    const b = Buffer.allocUnsafeSlow(size); // own ArrayBuffer, byteOffset 0, not zero-filled
    const fresh = b.buffer as ArrayBuffer;
    this.owned.add(fresh);
    return fresh;
  }

  /** Whether `buf` came from `take` and is not pinned. */
  owns(buf: ArrayBufferLike): boolean {
    return this.owned.has(buf as ArrayBuffer);
  }

  /** Never recycle `buf` (another tensor may hold a view of it). */
  pin(buf: ArrayBufferLike): void {
    this.owned.delete(buf as ArrayBuffer);
  }

  /** Takes `buf` back once its tensor is gone; buffers not made here are ignored. */
  give(buf: ArrayBufferLike): void {
    const b = buf as ArrayBuffer;
    if (!this.owned.has(b) || b.byteLength > this.maxBytes) return;
    this.used.set(b.byteLength, ++this.clock);
    if (this.pooledBytes + b.byteLength > this.maxBytes) this.evict(b.byteLength);
    let list = this.free.get(b.byteLength);
    if (!list) this.free.set(b.byteLength, (list = []));
    list.push(b);
    this.pooledBytes += b.byteLength;
  }

  /**
   * Leaves to V8 the free buffers of the size classes used longest ago until `incoming` more bytes
   * fit: when one phase's shapes give way to another's (a rollout's prefill, then an update's
   * sequences), the pool follows instead of staying full of buffers nobody asks for, which made
   * every allocation of the next phase a miss.
   */
  private evict(incoming: number): void {
    const classes = [...this.free.keys()].sort((x, y) => (this.used.get(x) ?? 0) - (this.used.get(y) ?? 0));
    for (const size of classes) {
      const list = this.free.get(size) as ArrayBuffer[];
      while (list.length > 0 && this.pooledBytes + incoming > this.maxBytes) {
        list.pop();
        this.pooledBytes -= size;
        this.stats.evicted++;
      }
      if (list.length === 0) this.free.delete(size);
      if (this.pooledBytes + incoming <= this.maxBytes) return;
    }
  }

  /** Bytes held in the free lists. */
  get heldBytes(): number {
    return this.pooledBytes;
  }
}
