import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { TensorBoardWriter, encodeEvent } from './tensorboard.ts';
import { maskedCrc32c } from './crc32c.ts';

// A small independent decoder: TFRecord framing (checking both CRCs) and generic protobuf fields.
function readRecords(buf: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let p = 0;
  while (p < buf.length) {
    const len = Number(view.getBigUint64(p, true));
    expect(view.getUint32(p + 8, true)).toBe(maskedCrc32c(buf.subarray(p, p + 8)));
    const data = buf.subarray(p + 12, p + 12 + len);
    expect(view.getUint32(p + 12 + len, true)).toBe(maskedCrc32c(data));
    out.push(data);
    p += 12 + len + 4;
  }
  return out;
}

type Field = { field: number; wire: number; value: number | Uint8Array };
function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let p = 0;
  const varint = (): number => {
    let n = 0;
    let mul = 1;
    for (;;) {
      const b = buf[p++] as number;
      n += (b & 0x7f) * mul;
      mul *= 128;
      if (b < 0x80) return n;
    }
  };
  while (p < buf.length) {
    const key = varint();
    const field = key >> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ field, wire, value: varint() });
    else if (wire === 1) {
      out.push({ field, wire, value: view.getFloat64(p, true) });
      p += 8;
    } else if (wire === 5) {
      out.push({ field, wire, value: view.getFloat32(p, true) });
      p += 4;
    } else if (wire === 2) {
      const len = varint();
      out.push({ field, wire, value: buf.subarray(p, p + len) });
      p += len;
    } else throw new Error(`wire type ${wire}`);
  }
  return out;
}

const text = (v: Field['value']) => new TextDecoder().decode(v as Uint8Array);

function decodeEvent(data: Uint8Array) {
  const f = fields(data);
  const get = (n: number) => f.find((x) => x.field === n)?.value;
  const summary = get(5) as Uint8Array | undefined;
  const scalars: Record<string, number> = {};
  if (summary) {
    for (const v of fields(summary).filter((x) => x.field === 1)) {
      const vf = fields(v.value as Uint8Array);
      scalars[text(vf.find((x) => x.field === 1)?.value ?? new Uint8Array())] = vf.find((x) => x.field === 2)
        ?.value as number;
    }
  }
  return {
    wallTime: get(1) as number,
    step: get(2) as number,
    fileVersion: get(3) ? text(get(3) as Uint8Array) : undefined,
    scalars,
  };
}

describe('encodeEvent', () => {
  it('hand-checked bytes of a minimal event', () => {
    // wall_time 0 -> 09 + 8 zero bytes; step 300 -> 10 ac 02 (300 = 0b10_0101100)
    expect(Array.from(encodeEvent({ wallTime: 0, step: 300 }))).toEqual([
      0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0xac, 0x02,
    ]);
  });
});

describe('TensorBoardWriter', () => {
  it('writes a file that decodes back to the same events', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tb-'));
    try {
      const w = new TensorBoardWriter(dir, () => 1_700_000_000_500);
      w.scalars(1, { 'reward/planner': 0.25, 'losses/clipfrac': 0.125, bad: Number.NaN }, 1_700_000_001_000);
      w.scalars(2, { 'reward/planner': 0.75 }, 1_700_000_002_000);
      w.close();
      expect(w.path).toMatch(/events\.out\.tfevents\.1700000000\./);
      const events = readRecords(new Uint8Array(readFileSync(w.path))).map(decodeEvent);
      expect(events).toEqual([
        { wallTime: 1_700_000_000.5, step: 0, fileVersion: 'brain.Event:2', scalars: {} },
        {
          wallTime: 1_700_000_001,
          step: 1,
          fileVersion: undefined,
          scalars: { 'reward/planner': 0.25, 'losses/clipfrac': 0.125 },
        },
        { wallTime: 1_700_000_002, step: 2, fileVersion: undefined, scalars: { 'reward/planner': 0.75 } },
      ]);

      // If the real tensorboard package is installed, it must read the file too (it is not here).
      let hasTb = false;
      try {
        execFileSync('python3', ['-c', 'import tensorboard'], { stdio: 'ignore' });
        hasTb = true;
      } catch {
        hasTb = false;
      }
      if (hasTb) {
        const script = [
          'import sys',
          'from tensorboard.backend.event_processing.event_accumulator import EventAccumulator',
          'a = EventAccumulator(sys.argv[1]); a.Reload()',
          "print([(e.step, round(e.value, 4)) for e in a.Scalars('reward/planner')])",
        ].join('\n');
        const out = execFileSync('python3', ['-c', script, dir]).toString().trim();
        expect(out).toBe('[(1, 0.25), (2, 0.75)]');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
