import type * as tf from '@tensorflow/tfjs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from './causal-lm.ts';
import { hfConfigFor, modelConfigFromHf } from './config.ts';
import { f32BitsToBf16 } from './io/dtype.ts';
import { buildHeader, type TensorEntry } from './io/header.ts';
import { readWeights, writeSafetensors, type WriteTensor } from './io/safetensors.ts';
import { weightSpecs } from './weight-map.ts';

/**
 * CausalLM.load reads F16 / BF16 checkpoints tensor by tensor into float32: the values are exactly
 * those of the same numbers stored as F32, and the host memory it holds at once is the largest
 * tensor (twice for a linear weight, which is transposed on the way in), not the whole model.
 */
const HF = hfConfigFor({
  arch: 'qwen3',
  layers: 4,
  hidden: 64,
  heads: 4,
  kvHeads: 2,
  intermediate: 192,
  vocab: 3000,
  tieEmbeddings: true,
});

let dir: string;
beforeAll(async () => {
  await initBackend('wasm');
  dir = await mkdtemp(join(tmpdir(), 'sharp-load-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** IEEE binary16 bits of a value that binary16 holds exactly. */
function f16Bits(x: number): number {
  if (x === 0) return Object.is(x, -0) ? 0x8000 : 0;
  const sign = x < 0 ? 0x8000 : 0;
  const a = Math.abs(x);
  const e = Math.floor(Math.log2(a));
  if (e < -14) return sign | Math.round(a / 2 ** -24); // subnormal
  return sign | ((e + 15) << 10) | Math.round((a / 2 ** e - 1) * 1024);
}

async function writeF16(file: string, tensors: ReadonlyMap<string, WriteTensor>): Promise<void> {
  const entries: TensorEntry[] = [];
  let pos = 0;
  for (const [name, t] of [...tensors].sort(([a], [b]) => (a < b ? -1 : 1))) {
    entries.push({ name, dtype: 'F16', shape: t.shape, begin: pos, end: pos + 2 * t.data.length });
    pos += 2 * t.data.length;
  }
  const header = buildHeader(entries, { format: 'pt' });
  const body = new Uint16Array(pos / 2);
  for (const e of entries) {
    const d = (tensors.get(e.name) as WriteTensor).data;
    for (let i = 0; i < d.length; i++) body[e.begin / 2 + i] = f16Bits(d[i] as number);
  }
  await writeFile(file, Buffer.concat([header, Buffer.from(body.buffer)]));
}

const values = (m: CausalLM) =>
  new Map([...m.baseVariables()].map(([n, v]) => [n, Array.from((v as tf.Variable).dataSync())]));

describe('CausalLM.load of half-precision checkpoints', () => {
  it('F16 and BF16 load to exactly the float32 values of the same numbers, one tensor at a time', async () => {
    const src = CausalLM.random(HF, 3);
    await src.save(join(dir, 'f32'));
    src.dispose();
    const w = await readWeights(join(dir, 'f32'));
    // F16: round every value to a multiple of 2^-14 in (-2^-4, 2^-4), which binary16 holds exactly.
    const f16 = new Map<string, WriteTensor>();
    // BF16: round to nearest even as the writer does, then decode (the upper half of a float32).
    const bf16 = new Map<string, WriteTensor>();
    const u = new Uint32Array(1);
    const f = new Float32Array(u.buffer);
    for (const [name, t] of w) {
      f16.set(name, {
        shape: t.shape,
        data: t.data.map((x) => Math.max(-1023, Math.min(1023, Math.round(x * 2 ** 14))) / 2 ** 14),
      });
      bf16.set(name, {
        shape: t.shape,
        data: t.data.map((x) => {
          f[0] = x;
          u[0] = f32BitsToBf16(u[0] as number) << 16;
          return f[0] as number;
        }),
      });
    }
    for (const [name, tensors, write] of [
      ['f16', f16, (file: string) => writeF16(file, f16)],
      ['bf16', bf16, (file: string) => writeSafetensors(file, bf16, { dtype: 'BF16' })],
    ] as const) {
      const half = join(dir, name);
      const ref = join(dir, `${name}-as-f32`);
      for (const d of [half, ref]) {
        await mkdir(d, { recursive: true });
        await copyFile(join(dir, 'f32', 'config.json'), join(d, 'config.json'));
      }
      await write(join(half, 'model.safetensors'));
      await writeSafetensors(join(ref, 'model.safetensors'), tensors);
      const a = await CausalLM.load(half);
      const b = await CausalLM.load(ref);
      expect(values(a)).toEqual(values(b));
      // Not all zero or all equal: the rounding kept the weights' spread.
      expect(new Set(values(a).get('model.layers.0.mlp.up_proj.weight')).size).toBeGreaterThan(100);
      // Host memory: one tensor at a time (a linear weight and its transpose), never the whole model.
      const specs = weightSpecs(modelConfigFromHf(HF));
      const largest = Math.max(
        ...specs.map((s) => 4 * s.hfShape.reduce((x, y) => x * y, 1) * (s.kind === 'linear' ? 2 : 1)),
      );
      expect(largest).toBe(4 * 3000 * 64); // the tied embedding [V, D]
      expect(a.loadInfo?.hostPeakBytes).toBe(largest);
      expect(a.loadInfo?.float32Bytes).toBe(4 * a.numParameters());
      expect((a.loadInfo?.hostPeakBytes as number) * 2).toBeLessThan(a.loadInfo?.float32Bytes as number);
      a.dispose();
      b.dispose();
    }
  });
});
