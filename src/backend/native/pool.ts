import { totalmem } from 'node:os';

/**
 * Recycles the buffers of the `native` backend's kernel outputs. A fresh large ArrayBuffer costs a
 * zero-fill and a page fault per 4 KiB on first touch, and is freed only when V8 collects it; the
 * wasm heap reuses warm memory instead, which made every output of the native kernels 2-10x slower
 * than the same kernel on wasm (bench model: 4 MB logits-sized outputs, ~2 ms each). The kernels
 * write every element of their outputs, so a recycled buffer needs no clearing.
 *
 * A buffer is recycled only when nothing else can still see it: it was made here (`take`), its
 * tensor's data was deleted (refCount 0), and no other tensor was ever stored on it (a JS kernel
 * of tfjs-backend-cpu may store a view of an input, e.g. a simple Slice's `subarray`: `pin` then
 * takes the buffer out of the scheme and V8 frees it as usual).
 */
export class ArrayPool {
  private readonly free = new Map<number, ArrayBuffer[]>();
  private readonly owned = new WeakSet<ArrayBuffer>();
  private pooledBytes = 0;
  /** Hits and misses of `take` (tests and doctor). */
  readonly stats = { hits: 0, misses: 0 };

  /** `maxBytes`: the most the free lists hold; above it a returned buffer is left to V8. */
  constructor(
    readonly maxBytes = Math.min(4 * 2 ** 30, totalmem() / 8),
    readonly minBytes = 64,
  ) {}

  /** A buffer of exactly `bytes` bytes, contents undefined. */
  take(bytes: number): ArrayBuffer {
    if (bytes < this.minBytes) return new ArrayBuffer(bytes);
    const list = this.free.get(bytes);
    const buf = list?.pop();
    if (buf) {
      this.pooledBytes -= bytes;
      this.stats.hits++;
      return buf;
    }
    this.stats.misses++;
    const b = Buffer.allocUnsafeSlow(bytes); // own ArrayBuffer, byteOffset 0, not zero-filled
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
    if (!this.owned.has(b) || this.pooledBytes + b.byteLength > this.maxBytes) return;
    let list = this.free.get(b.byteLength);
    if (!list) this.free.set(b.byteLength, (list = []));
    list.push(b);
    this.pooledBytes += b.byteLength;
  }

  /** Bytes held in the free lists. */
  get heldBytes(): number {
    return this.pooledBytes;
  }
}
