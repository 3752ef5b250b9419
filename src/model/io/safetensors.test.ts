import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  readSafetensors,
  readSafetensorsHeader,
  readWeights,
  writeSafetensors,
  writeWeights,
  type WriteTensor,
} from './safetensors.ts';
import { readHfConfig } from './hf-config.ts';
import { checkWeightShapes } from './expected-shapes.ts';
import { errorOf } from '../../../test/one-line-error.ts';

const REAL = resolve(import.meta.dirname, '../../../../shared/models/tinystories-260k');
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-st-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function t(shape: number[], values: number[]): WriteTensor {
  return { shape, data: new Float32Array(values) };
}

/** A file with a hand-written header and data section (for the bad-file cases). */
async function rawFile(
  name: string,
  header: string | object,
  data: Uint8Array,
  lengthOverride?: number,
): Promise<string> {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(lengthOverride ?? json.length));
  const file = join(dir, name);
  await writeFile(file, Buffer.concat([prefix, json, data]));
  return file;
}

describe('writeSafetensors / readSafetensors', () => {
  const tensors = new Map<string, WriteTensor>([
    ['b.weight', t([2, 3], [1, -2, 3.5, 1e-42, Infinity, -0])],
    ['a.bias', t([3], [0.1, 0.2, NaN])],
    ['scalar', t([], [42])],
    ['empty', t([0, 4], [])],
  ]);

  it('round-trips F32 bit for bit and rewrites identical bytes', async () => {
    const f1 = join(dir, 'rt1.safetensors');
    const f2 = join(dir, 'rt2.safetensors');
    await writeSafetensors(f1, tensors, { metadata: { format: 'pt' } });
    const back = await readSafetensors(f1);
    expect([...back.keys()]).toEqual(['a.bias', 'b.weight', 'empty', 'scalar']); // data order = sorted names
    for (const [name, want] of tensors) {
      const got = back.get(name);
      expect(got?.dtype).toBe('F32');
      expect(got?.shape).toEqual(want.shape);
      expect(new Uint32Array((got as { data: Float32Array }).data.buffer)).toEqual(new Uint32Array(want.data.buffer));
    }
    await writeSafetensors(f2, back, { metadata: { format: 'pt' } });
    expect(Buffer.compare(await readFile(f1), await readFile(f2))).toBe(0);
    expect((await readdir(dir)).filter((n) => n.includes('.tmp-'))).toEqual([]); // no temp files left behind
  });

  it('lays the header out as the format says', async () => {
    const f = join(dir, 'layout.safetensors');
    await writeSafetensors(f, new Map([['w', t([2], [1, 2])]]), { metadata: { k: 'v' } });
    const bytes = await readFile(f);
    const json = '{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"k":"v"}}'; // 79 bytes
    const n = Number(bytes.readBigUInt64LE(0));
    expect(n).toBe(80); // padded to a multiple of 8 with spaces
    expect(bytes.subarray(8, 8 + n).toString()).toBe(json + ' ');
    expect(bytes.length).toBe(8 + 80 + 8);
    expect(bytes.readFloatLE(88)).toBe(1);
    expect(bytes.readFloatLE(92)).toBe(2);
    const h = await readSafetensorsHeader(f);
    expect(h.metadata).toEqual({ k: 'v' });
    expect(h.dataStart).toBe(88);
  });

  it('writes BF16 with round-to-nearest-even and reads it back as float32', async () => {
    const f = join(dir, 'bf16.safetensors');
    // Hand-computed bf16 results: 1 + 2^-8 ties to even -> 1; 1 + 3*2^-8 ties to even -> 1 + 2^-6;
    // 1 + 2^-8 + 2^-20 rounds up -> 1 + 2^-7; -2.5 exact; float32 max overflows to Inf.
    const src = [1, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -2.5, 3.4028234663852886e38];
    await writeSafetensors(f, new Map([['x', t([6], src)]]), { dtype: 'BF16' });
    const bytes = await readFile(f);
    const n = Number(bytes.readBigUInt64LE(0));
    expect(bytes.length).toBe(8 + n + 12); // 6 values x 2 bytes
    expect(bytes.readUInt16LE(8 + n)).toBe(0x3f80);
    const x = (await readSafetensors(f)).get('x');
    expect(x?.dtype).toBe('BF16');
    expect(Array.from(x?.data ?? [])).toEqual([1, 1, 1 + 2 ** -6, 1 + 2 ** -7, -2.5, Infinity]);
  });

  it('reads F16 tensors', async () => {
    const data = new Uint8Array([0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00]); // 1, -2, 65504, 2^-24
    const f = await rawFile('f16.safetensors', { h: { dtype: 'F16', shape: [2, 2], data_offsets: [0, 8] } }, data);
    const h = (await readSafetensors(f)).get('h');
    expect(h?.dtype).toBe('F16');
    expect(h?.shape).toEqual([2, 2]);
    expect(Array.from(h?.data ?? [])).toEqual([1, -2, 65504, 2 ** -24]);
  });

  it('reads only the requested names', async () => {
    const f = join(dir, 'subset.safetensors');
    await writeSafetensors(f, tensors);
    expect([...(await readSafetensors(f, { names: new Set(['scalar']) })).keys()]).toEqual(['scalar']);
  });
});

describe('bad safetensors files give one-line errors naming file and tensor', () => {
  const w8 = new Uint8Array(8);
  it.each([
    ['missing file', async () => join(dir, 'nope.safetensors'), /nope\.safetensors: cannot open \(no such file\)/],
    [
      'shorter than the length prefix',
      async () => {
        const f = join(dir, 'tiny.safetensors');
        await writeFile(f, Buffer.from([1, 2, 3, 4]));
        return f;
      },
      /tiny\.safetensors: truncated file \(4 bytes/,
    ],
    [
      'header length past EOF',
      async () => rawFile('hlen.safetensors', '{}', w8, 1000),
      /hlen\.safetensors: header length 1000 runs past the end of the file \(18 bytes\)/,
    ],
    ['bad JSON', async () => rawFile('json.safetensors', '{"w": {', w8), /json\.safetensors: header is not valid JSON/],
    [
      'unknown dtype',
      async () => rawFile('dt.safetensors', { w: { dtype: 'I8', shape: [8], data_offsets: [0, 8] } }, w8),
      /dt\.safetensors: tensor 'w': unknown dtype "I8"/,
    ],
    [
      'offsets not matching shape x dtype',
      async () => rawFile('size.safetensors', { w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, w8),
      /tensor 'w': data_offsets \[0, 8\] span 8 bytes but shape \[3\] x F32 needs 12/,
    ],
    [
      'offsets out of range',
      async () => rawFile('range.safetensors', { w: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }, w8),
      /range\.safetensors: truncated file: tensor 'w' data_offsets \[0, 16\] run past the data section \(8 bytes\)/,
    ],
    [
      'overlapping offsets',
      async () =>
        rawFile(
          'ovl.safetensors',
          {
            a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
            b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
          },
          new Uint8Array(12),
        ),
      /ovl\.safetensors: tensor 'b': data_offsets \[4, 12\] overlap tensor 'a'/,
    ],
    [
      'a gap between tensors',
      async () =>
        rawFile(
          'gap.safetensors',
          {
            a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] },
            b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] },
          },
          new Uint8Array(12),
        ),
      /tensor 'b': data_offsets \[8, 12\] leave a gap of 4 bytes after tensor 'a'/,
    ],
    [
      'malformed offsets',
      async () => rawFile('neg.safetensors', { w: { dtype: 'F32', shape: [2], data_offsets: [8, 0] } }, w8),
      /tensor 'w': data_offsets \[8,0\] are not \[begin, end\]/,
    ],
    [
      'bad shape',
      async () => rawFile('shape.safetensors', { w: { dtype: 'F32', shape: [-2], data_offsets: [0, 8] } }, w8),
      /tensor 'w': shape \[-2\] is not a list of non-negative integers/,
    ],
    [
      'trailing bytes',
      async () => rawFile('trail.safetensors', { w: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, w8),
      /trail\.safetensors: 4 bytes after the last tensor/,
    ],
    [
      'bad metadata',
      async () => rawFile('meta.safetensors', { __metadata__: { n: 1 } }, new Uint8Array(0)),
      /meta\.safetensors: __metadata__ key 'n' is not a string/,
    ],
    [
      'a file cut short after writing',
      async () => {
        const f = join(dir, 'cut.safetensors');
        await writeSafetensors(
          f,
          new Map([
            ['a', t([2], [1, 2])],
            ['z', t([3], [1, 2, 3])],
          ]),
        );
        const size = (await readFile(f)).length;
        await truncate(f, size - 3);
        return f;
      },
      /cut\.safetensors: truncated file: tensor 'z' data_offsets \[8, 20\] run past the data section \(17 bytes\)/,
    ],
  ])('%s', async (_name, make, want) => {
    const f = await make();
    expect(await errorOf(readSafetensors(f))).toMatch(want);
  });

  it('rejects data that does not match its shape when writing', async () => {
    const msg = await errorOf(writeSafetensors(join(dir, 'w.safetensors'), new Map([['w', t([2, 2], [1, 2, 3])]])));
    expect(msg).toMatch(/tensor 'w': data has 3 values but shape \[2, 2\] needs 4/);
    expect(existsSync(join(dir, 'w.safetensors'))).toBe(false);
  });
});

describe('readWeights / writeWeights', () => {
  const tensors = new Map<string, WriteTensor>([
    ['model.a', t([4], [1, 2, 3, 4])],
    ['model.b', t([2, 2], [5, 6, 7, 8])],
    ['model.c', t([3], [9, 10, 11])],
  ]);

  it('reads a single model.safetensors', async () => {
    const d = await mkdtemp(join(dir, 'single-'));
    await writeWeights(d, tensors);
    const w = await readWeights(d);
    expect([...w.keys()]).toEqual(['model.a', 'model.b', 'model.c']);
    expect((await readSafetensorsHeader(join(d, 'model.safetensors'))).metadata).toEqual({ format: 'pt' });
  });

  it('writes and reads HF shards through model.safetensors.index.json', async () => {
    const d = await mkdtemp(join(dir, 'shard-'));
    await writeWeights(d, tensors, { maxShardBytes: 16 }); // 16 + 16 + 12 bytes -> three shards
    expect((await readdir(d)).sort()).toEqual([
      'model-00001-of-00003.safetensors',
      'model-00002-of-00003.safetensors',
      'model-00003-of-00003.safetensors',
      'model.safetensors.index.json',
    ]);
    const index = JSON.parse(await readFile(join(d, 'model.safetensors.index.json'), 'utf8')) as {
      metadata: { total_size: number };
      weight_map: Record<string, string>;
    };
    expect(index.metadata.total_size).toBe(44);
    expect(index.weight_map['model.c']).toBe('model-00003-of-00003.safetensors');
    const w = await readWeights(d);
    expect(Array.from(w.get('model.b')?.data ?? [])).toEqual([5, 6, 7, 8]);
    expect(Array.from(w.get('model.c')?.data ?? [])).toEqual([9, 10, 11]);
    // Re-sharding into fewer files removes the shards the new index no longer names.
    await writeWeights(d, tensors, { maxShardBytes: 32 }); // 16 + 16 | 12 -> two shards
    expect((await readdir(d)).sort()).toEqual([
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
      'model.safetensors.index.json',
    ]);
    expect(Array.from((await readWeights(d)).get('model.c')?.data ?? [])).toEqual([9, 10, 11]);
    // Writing the single-file layout afterwards removes the stale index and shards.
    await writeWeights(d, tensors);
    expect(await readdir(d)).toEqual(['model.safetensors']);
  });

  it('names a missing shard, a tensor missing from its shard, and an empty folder', async () => {
    const d = await mkdtemp(join(dir, 'bad-'));
    expect(await errorOf(readWeights(d))).toMatch(
      /no model\.safetensors or model\.safetensors\.index\.json in this folder/,
    );
    await writeWeights(d, tensors, { maxShardBytes: 16 });
    const indexFile = join(d, 'model.safetensors.index.json');
    const index = JSON.parse(await readFile(indexFile, 'utf8')) as { weight_map: Record<string, string> };
    index.weight_map['model.ghost'] = 'model-00001-of-00003.safetensors';
    await writeFile(indexFile, JSON.stringify(index));
    expect(await errorOf(readWeights(d))).toMatch(
      /model-00001-of-00003\.safetensors: tensor 'model\.ghost' is listed in model\.safetensors\.index\.json but missing from this shard/,
    );
    await rm(join(d, 'model-00002-of-00003.safetensors'));
    expect(await errorOf(readWeights(d))).toMatch(
      /model\.safetensors\.index\.json: shard 'model-00002-of-00003\.safetensors' \(holding tensor 'model\.b'\) is missing/,
    );
    await writeFile(indexFile, '{"weight_map": ');
    expect(await errorOf(readWeights(d))).toMatch(/model\.safetensors\.index\.json: not valid JSON/);
  });
});

describe('real checkpoint (tinystories-260k)', () => {
  const file = join(REAL, 'model.safetensors');
  it.skipIf(!existsSync(file))('matches its config.json and numpy reference values', async () => {
    const cfg = await readHfConfig(REAL);
    const w = await readWeights(REAL);
    expect(w.size).toBe(47); // 1 embedding + 5 layers x 9 + final norm; tied head
    expect(checkWeightShapes(w, cfg, file)).toEqual([]);
    expect(w.get('model.layers.0.self_attn.k_proj.weight')?.shape).toEqual([32, 64]); // 4 kv heads x head_dim 8
    // Reference values read with numpy.frombuffer(dtype='<f4') from the same file.
    expect(Array.from(w.get('model.norm.weight')?.data.subarray(0, 4) ?? [])).toEqual([
      2.4583089351654053, 1.3673226833343506, 1.7504382133483887, 1.1078318357467651,
    ]);
    const emb = w.get('model.embed_tokens.weight')?.data as Float32Array;
    expect(Array.from(emb.subarray(403 * 64, 403 * 64 + 3))).toEqual([
      0.003543718019500375, -0.17016193270683289, 0.031364064663648605,
    ]);
    expect(emb.reduce((s, v) => s + Math.abs(v), 0)).toBeCloseTo(7820.582960873879, 6);
  });

  it.skipIf(!existsSync(file))('rewrites the HF-written file byte for byte', async () => {
    const w = await readSafetensors(file);
    const out = join(dir, 'tinystories-copy.safetensors');
    const header = await readSafetensorsHeader(file);
    await writeSafetensors(out, w, { metadata: header.metadata });
    expect(Buffer.compare(await readFile(out), await readFile(file))).toBe(0);
  });
});
