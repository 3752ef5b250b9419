/**
 * TensorBoard event-file writer without native dependencies, so that
 * `tensorboard --logdir runs` shows the training curves. An event file is a sequence of TFRecords
 *   u64 length (LE) | u32 masked crc32c(length bytes) | data | u32 masked crc32c(data)
 * whose data are Event protobufs (tensorflow/core/util/event.proto), hand-encoded here:
 *   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
 *   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
 * The first record carries file_version "brain.Event:2", as TensorFlow's writer does.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { maskedCrc32c } from './crc32c.ts';

class Bytes {
  private parts: number[] = [];

  byte(b: number): this {
    this.parts.push(b & 0xff);
    return this;
  }

  /** Base-128 varint of a non-negative integer below 2^53. */
  varint(n: number): this {
    if (!Number.isSafeInteger(n) || n < 0)
      throw new Error(`tensorboard: varint needs a non-negative safe integer, got ${n}`);
    while (n >= 0x80) {
      this.byte((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    return this.byte(n);
  }

  key(field: number, wireType: number): this {
    return this.varint((field << 3) | wireType);
  }

  raw(bytes: Uint8Array): this {
    for (const b of bytes) this.parts.push(b);
    return this;
  }

  lengthDelimited(field: number, bytes: Uint8Array): this {
    return this.key(field, 2).varint(bytes.length).raw(bytes);
  }

  double(field: number, x: number): this {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, x, true);
    return this.key(field, 1).raw(b);
  }

  float(field: number, x: number): this {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, x, true);
    return this.key(field, 5).raw(b);
  }

  done(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Encodes an Event with scalar summaries (or a file_version when given). */
export function encodeEvent(e: {
  wallTime: number;
  step: number;
  fileVersion?: string;
  scalars?: Record<string, number>;
}): Uint8Array {
  const out = new Bytes().double(1, e.wallTime).key(2, 0).varint(e.step);
  if (e.fileVersion !== undefined) out.lengthDelimited(3, utf8(e.fileVersion));
  if (e.scalars) {
    const summary = new Bytes();
    for (const [tag, value] of Object.entries(e.scalars)) {
      summary.lengthDelimited(1, new Bytes().lengthDelimited(1, utf8(tag)).float(2, value).done());
    }
    out.lengthDelimited(5, summary.done());
  }
  return out.done();
}

/** Wraps one record's data in TFRecord framing. */
function frameRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + 4 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}

export class TensorBoardWriter {
  readonly path: string;
  private fd: number | undefined;

  /** Creates `<logDir>/events.out.tfevents.<unix seconds>.<host>` (a new file per process, as TF does). */
  constructor(logDir: string, now: () => number = Date.now) {
    mkdirSync(logDir, { recursive: true });
    const t = now();
    this.path = join(logDir, `events.out.tfevents.${Math.floor(t / 1000)}.${hostname()}.${process.pid}`);
    this.fd = openSync(this.path, 'a');
    this.write(encodeEvent({ wallTime: t / 1000, step: 0, fileVersion: 'brain.Event:2' }));
  }

  private write(data: Uint8Array): void {
    if (this.fd === undefined) throw new Error(`tensorboard: ${this.path} is closed`);
    writeSync(this.fd, frameRecord(data));
  }

  /** Writes the finite numeric values of `scalars` as one Event at `step`. */
  scalars(step: number, scalars: Record<string, number>, wallTimeMs: number = Date.now()): void {
    const finite = Object.fromEntries(
      Object.entries(scalars).filter(([, v]) => typeof v === 'number' && Number.isFinite(v)),
    );
    this.write(encodeEvent({ wallTime: wallTimeMs / 1000, step, scalars: finite }));
  }

  /** Forces the events to disk (e.g. at a checkpoint). */
  flush(): void {
    if (this.fd !== undefined) fsyncSync(this.fd);
  }

  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }
}
