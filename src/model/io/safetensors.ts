/**
 * safetensors checkpoints: read F32 / F16 / BF16 into float32,
 * write F32 or BF16, single files or HF shards (model.safetensors.index.json). Reads stream each
 * tensor through a file handle in bounded chunks, so a checkpoint is never held twice in memory.
 */
import { existsSync } from 'node:fs';
import { open, readFile, rm, type FileHandle } from 'node:fs/promises';
import { endianness } from 'node:os';
import { basename, join } from 'node:path';
import { withAtomicFile, writeJsonAtomic } from '../../fs/atomic.ts';
import { DTYPE_BYTES, decodeInto, encodeInto, type DiskDtype } from './dtype.ts';
import { assertShardName } from './guards.ts';
import { CheckpointError } from './errors.ts';
import {
  buildHeader,
  checkHeaderLength,
  numel,
  parseHeader,
  type SafetensorsHeader,
  type TensorEntry,
} from './header.ts';

export interface HostTensor {
  /** dtype on disk. */
  dtype: DiskDtype;
  shape: number[];
  /** Always float32, whatever the dtype on disk. */
  data: Float32Array;
}

/** A tensor to write: float32 values in row-major order. */
export interface WriteTensor {
  shape: number[];
  data: Float32Array;
}

export interface WriteOptions {
  /** dtype on disk: F32 (default, lossless) or BF16 (half the bytes, round-to-nearest-even). */
  dtype?: 'F32' | 'BF16';
  /** String map stored under `__metadata__`. */
  metadata?: Record<string, string>;
}

const SINGLE_FILE = 'model.safetensors';
const INDEX_FILE = 'model.safetensors.index.json';

// Bounded scratch for dtype conversion: 16 MiB whatever the tensor size.
const CHUNK_BYTES = 16 * 1024 * 1024;
const HOST_LE = endianness() === 'LE';
// Node rejects a single read/write above 2 GiB; big tensors (a 150k x 4k embedding) go in 1 GiB calls.
const IO_MAX_BYTES = 1 << 30;

async function writeAll(fh: FileHandle, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.byteLength) {
    const { bytesWritten } = await fh.write(bytes, done, Math.min(bytes.byteLength - done, IO_MAX_BYTES));
    done += bytesWritten;
  }
}

async function readExactly(
  fh: FileHandle,
  file: string,
  what: string,
  dst: Uint8Array,
  position: number,
): Promise<void> {
  let done = 0;
  while (done < dst.byteLength) {
    const { bytesRead } = await fh.read(dst, done, Math.min(dst.byteLength - done, IO_MAX_BYTES), position + done);
    if (bytesRead === 0)
      throw new CheckpointError(
        `${file}: truncated file: ${what} ends at byte ${position + dst.byteLength} but the file ended at ` +
          `${position + done}`,
      );
    done += bytesRead;
  }
}

async function readHeaderFrom(fh: FileHandle, file: string): Promise<SafetensorsHeader> {
  const size = (await fh.stat()).size;
  const prefix = new Uint8Array(Math.min(8, size));
  await readExactly(fh, file, 'header length', prefix, 0);
  const n = checkHeaderLength(file, prefix, size);
  const json = new Uint8Array(n);
  await readExactly(fh, file, 'header', json, 8);
  return parseHeader(file, Buffer.from(json.buffer, json.byteOffset, n).toString('utf8'), n, size - 8 - n);
}

/** Reads and validates only the header of a safetensors file (names, dtypes, shapes, offsets). */
export async function readSafetensorsHeader(file: string): Promise<SafetensorsHeader> {
  const fh = await openForRead(file);
  try {
    return await readHeaderFrom(fh, file);
  } finally {
    await fh.close();
  }
}

async function openForRead(file: string): Promise<FileHandle> {
  try {
    return await open(file, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CheckpointError(`${file}: cannot open (${code === 'ENOENT' ? 'no such file' : (code ?? String(err))})`);
  }
}

async function readTensor(fh: FileHandle, file: string, dataStart: number, e: TensorEntry): Promise<HostTensor> {
  const n = numel(e.shape);
  const data = new Float32Array(n);
  const what = `tensor '${e.name}'`;
  if (e.dtype === 'F32' && HOST_LE) {
    // Little-endian host: the file bytes are the float32 values; read straight into them.
    await readExactly(fh, file, what, new Uint8Array(data.buffer), dataStart + e.begin);
    return { dtype: e.dtype, shape: [...e.shape], data };
  }
  const bytesPer = DTYPE_BYTES[e.dtype];
  const perChunk = Math.max(1, Math.floor(CHUNK_BYTES / bytesPer));
  const scratch = new Uint8Array(Math.min(n, perChunk) * bytesPer);
  for (let i = 0; i < n; i += perChunk) {
    const count = Math.min(perChunk, n - i);
    const chunk = scratch.subarray(0, count * bytesPer);
    await readExactly(fh, file, what, chunk, dataStart + e.begin + i * bytesPer);
    decodeInto(e.dtype, chunk, data, i, count);
  }
  return { dtype: e.dtype, shape: [...e.shape], data };
}

/**
 * Reads every tensor of a safetensors file (or only `names`, when given) as float32.
 * Errors are one line naming the file and tensor: truncated file, header length past EOF, bad JSON,
 * offsets out of range / overlapping / not matching shape x dtype, unknown dtype.
 */
export async function readSafetensors(
  file: string,
  opts: { names?: ReadonlySet<string> } = {},
): Promise<Map<string, HostTensor>> {
  const fh = await openForRead(file);
  try {
    const header = await readHeaderFrom(fh, file);
    const out = new Map<string, HostTensor>();
    for (const e of header.entries) {
      if (opts.names && !opts.names.has(e.name)) continue;
      out.set(e.name, await readTensor(fh, file, header.dataStart, e));
    }
    return out;
  } finally {
    await fh.close();
  }
}

/** Lays out tensors in sorted-name order and validates data length against shape. */
function layout(file: string, tensors: ReadonlyMap<string, WriteTensor>, dtype: 'F32' | 'BF16'): TensorEntry[] {
  const names = [...tensors.keys()].sort();
  const entries: TensorEntry[] = [];
  let pos = 0;
  for (const name of names) {
    const t = tensors.get(name) as WriteTensor;
    if (name === '__metadata__')
      throw new CheckpointError(`${file}: '__metadata__' is reserved and cannot name a tensor`);
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0))
      throw new CheckpointError(
        `${file}: tensor '${name}': shape [${t.shape.join(', ')}] is not a list of non-negative integers`,
      );
    const n = numel(t.shape);
    if (t.data.length !== n)
      throw new CheckpointError(
        `${file}: tensor '${name}': data has ${t.data.length} values but shape [${t.shape.join(', ')}] needs ${n}`,
      );
    const bytes = n * DTYPE_BYTES[dtype];
    entries.push({ name, dtype, shape: [...t.shape], begin: pos, end: pos + bytes });
    pos += bytes;
  }
  return entries;
}

async function writeTensorData(fh: FileHandle, t: WriteTensor, dtype: 'F32' | 'BF16'): Promise<void> {
  const n = t.data.length;
  if (dtype === 'F32' && HOST_LE) {
    await writeAll(fh, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    return;
  }
  const bytesPer = DTYPE_BYTES[dtype];
  const perChunk = Math.max(1, Math.floor(CHUNK_BYTES / bytesPer));
  const scratch = new Uint8Array(Math.min(n, perChunk) * bytesPer);
  for (let i = 0; i < n; i += perChunk) {
    const count = Math.min(perChunk, n - i);
    const chunk = scratch.subarray(0, count * bytesPer);
    encodeInto(dtype, t.data, i, count, chunk);
    await writeAll(fh, chunk);
  }
}

/**
 * Writes tensors to a safetensors file atomically (temp file + rename): names sorted, data
 * contiguous in that order, header padded with spaces to 8 bytes as the reference writer does.
 */
export async function writeSafetensors(
  file: string,
  tensors: ReadonlyMap<string, WriteTensor>,
  opts: WriteOptions = {},
): Promise<void> {
  const dtype = opts.dtype ?? 'F32';
  const entries = layout(file, tensors, dtype);
  const header = buildHeader(entries, opts.metadata);
  await withAtomicFile(file, async (fh) => {
    await writeAll(fh, header);
    for (const e of entries) await writeTensorData(fh, tensors.get(e.name) as WriteTensor, dtype);
  });
}

interface ShardIndex {
  metadata?: Record<string, unknown>;
  weight_map: Record<string, string>;
}

async function readIndex(dir: string): Promise<ShardIndex> {
  const file = join(dir, INDEX_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new CheckpointError(`${file}: not valid JSON (${(err as Error).message.split('\n')[0]})`);
  }
  const wm = (raw as { weight_map?: unknown } | null)?.weight_map;
  if (typeof wm !== 'object' || wm === null || Array.isArray(wm))
    throw new CheckpointError(`${file}: field 'weight_map' is missing or not an object`);
  for (const [name, shard] of Object.entries(wm)) {
    if (typeof shard !== 'string' || shard.includes('/') || shard.includes('\\'))
      throw new CheckpointError(`${file}: weight_map['${name}'] is not a shard file name in the same folder`);
  }
  return raw as ShardIndex;
}

/**
 * Reads a checkpoint folder's weights: `model.safetensors` when present (Transformers' order of
 * preference), else the shards listed by `model.safetensors.index.json` (`weight_map`). A missing
 * shard, or a tensor the index lists but its shard lacks, is a one-line error.
 */
export async function readWeights(dir: string): Promise<Map<string, HostTensor>> {
  const single = join(dir, SINGLE_FILE);
  if (existsSync(single)) return readSafetensors(single);
  const indexFile = join(dir, INDEX_FILE);
  if (!existsSync(indexFile)) throw new CheckpointError(`${dir}: no ${SINGLE_FILE} or ${INDEX_FILE} in this folder`);
  const index = await readIndex(dir);
  const byShard = new Map<string, Set<string>>();
  for (const [name, shard] of Object.entries(index.weight_map)) {
    assertShardName(indexFile, shard);
    if (!byShard.has(shard)) byShard.set(shard, new Set());
    byShard.get(shard)?.add(name);
  }
  for (const [shard, names] of byShard) {
    if (!existsSync(join(dir, shard)))
      throw new CheckpointError(`${indexFile}: shard '${shard}' (holding tensor '${[...names][0]}') is missing`);
  }
  const out = new Map<string, HostTensor>();
  for (const [shard, names] of [...byShard].sort(([a], [b]) => a.localeCompare(b))) {
    const got = await readSafetensors(join(dir, shard), { names });
    for (const name of names) {
      const t = got.get(name);
      if (!t)
        throw new CheckpointError(
          `${join(dir, shard)}: tensor '${name}' is listed in ${INDEX_FILE} but missing from this shard`,
        );
      out.set(name, t);
    }
  }
  return out;
}

export interface WriteWeightsOptions extends WriteOptions {
  /** Split into HF-named shards (model-00001-of-0000N.safetensors) above this many bytes each. */
  maxShardBytes?: number;
}

/**
 * Writes a checkpoint folder's weights: one `model.safetensors`, or shards plus
 * `model.safetensors.index.json` when they exceed `maxShardBytes`. Metadata defaults to
 * `{format: 'pt'}`, which Transformers checks when it loads safetensors. Stale files of the other
 * layout are removed after the new ones are in place, so the folder is always loadable.
 */
export async function writeWeights(
  dir: string,
  tensors: ReadonlyMap<string, WriteTensor>,
  opts: WriteWeightsOptions = {},
): Promise<void> {
  const dtype = opts.dtype ?? 'F32';
  const metadata = opts.metadata ?? { format: 'pt' };
  const names = [...tensors.keys()].sort();
  const bytesOf = (name: string): number => (tensors.get(name) as WriteTensor).data.length * DTYPE_BYTES[dtype];
  const totalBytes = names.reduce((s, n) => s + bytesOf(n), 0);
  const max = opts.maxShardBytes ?? Infinity;
  const groups: string[][] = [[]];
  let cur = 0;
  for (const name of names) {
    const b = bytesOf(name);
    if (cur > 0 && cur + b > max) {
      groups.push([]);
      cur = 0;
    }
    groups[groups.length - 1].push(name);
    cur += b;
  }
  if (groups.length === 1) {
    await writeSafetensors(join(dir, SINGLE_FILE), tensors, { dtype, metadata });
    await removeShardLayout(dir);
    return;
  }
  const pad = (i: number): string => String(i).padStart(5, '0');
  const oldShards = existsSync(join(dir, INDEX_FILE))
    ? new Set(Object.values((await readIndex(dir).catch(() => undefined))?.weight_map ?? {}))
    : new Set<string>();
  const weightMap: Record<string, string> = {};
  for (let g = 0; g < groups.length; g++) {
    const shard = `model-${pad(g + 1)}-of-${pad(groups.length)}.safetensors`;
    const sub = new Map(groups[g].map((n) => [n, tensors.get(n) as WriteTensor]));
    await writeSafetensors(join(dir, shard), sub, { dtype, metadata });
    for (const n of groups[g]) weightMap[n] = shard;
  }
  await writeJsonAtomic(join(dir, INDEX_FILE), { metadata: { total_size: totalBytes }, weight_map: weightMap });
  await rm(join(dir, SINGLE_FILE), { force: true });
  const newShards = new Set(Object.values(weightMap));
  for (const shard of oldShards) if (!newShards.has(shard)) await rm(join(dir, shard), { force: true });
}

async function removeShardLayout(dir: string): Promise<void> {
  const indexFile = join(dir, INDEX_FILE);
  if (!existsSync(indexFile)) return;
  const index = await readIndex(dir).catch(() => undefined);
  await rm(indexFile, { force: true });
  for (const shard of new Set(Object.values(index?.weight_map ?? {}))) await rm(join(dir, shard), { force: true });
}

/**
 * A checkpoint folder's tensors read one at a time (CausalLM.load): names, shapes and dtypes from the headers first.
 */
export interface WeightSource {
  /** Every tensor of the folder with its on-disk dtype and shape. */
  entries: ReadonlyMap<string, { dtype: DiskDtype; shape: number[] }>;
  /** Reads one tensor as float32 (a fresh array the caller owns). */
  read(name: string): Promise<HostTensor>;
  close(): Promise<void>;
}

/**
 * Opens a checkpoint folder (single file or shards, as readWeights) and reads only the headers, so
 * a loader can turn one tensor at a time into float32 and hand it on: host memory then peaks at
 * the largest tensor instead of the whole model (a BF16 file would otherwise be held twice over).
 */
export async function openWeights(dir: string): Promise<WeightSource> {
  const single = join(dir, SINGLE_FILE);
  const files: string[] = [];
  let listed: Map<string, string> | undefined; // tensor -> shard, from the index
  if (existsSync(single)) files.push(single);
  else {
    const indexFile = join(dir, INDEX_FILE);
    if (!existsSync(indexFile)) throw new CheckpointError(`${dir}: no ${SINGLE_FILE} or ${INDEX_FILE} in this folder`);
    const index = await readIndex(dir);
    listed = new Map();
    for (const [name, shard] of Object.entries(index.weight_map)) {
      assertShardName(indexFile, shard);
      listed.set(name, shard);
    }
    for (const shard of [...new Set(listed.values())].sort((a, b) => a.localeCompare(b))) {
      if (!existsSync(join(dir, shard)))
        throw new CheckpointError(
          `${indexFile}: shard '${shard}' (holding tensor '${[...listed].find(([, s]) => s === shard)?.[0]}') is ` +
            `missing`,
        );
      files.push(join(dir, shard));
    }
  }
  const handles: { fh: FileHandle; file: string; header: SafetensorsHeader }[] = [];
  const where = new Map<string, { h: number; e: TensorEntry }>();
  const entries = new Map<string, { dtype: DiskDtype; shape: number[] }>();
  try {
    for (const file of files) {
      const fh = await openForRead(file);
      handles.push({ fh, file, header: await readHeaderFrom(fh, file) });
      const h = handles.length - 1;
      for (const e of (handles[h] as { header: SafetensorsHeader }).header.entries) {
        // a shard's tensor the index does not assign to it
        if (listed && listed.get(e.name) !== basename(file)) continue;
        where.set(e.name, { h, e });
        entries.set(e.name, { dtype: e.dtype, shape: [...e.shape] });
      }
    }
    if (listed) {
      for (const [name, shard] of listed) {
        if (!where.has(name))
          throw new CheckpointError(
            `${join(dir, shard)}: tensor '${name}' is listed in ${INDEX_FILE} but missing from this shard`,
          );
      }
    }
  } catch (err) {
    for (const { fh } of handles) await fh.close();
    throw err;
  }
  return {
    entries,
    read: async (name) => {
      const at = where.get(name);
      if (!at) throw new CheckpointError(`${dir}: no tensor '${name}'`);
      const src = handles[at.h] as { fh: FileHandle; file: string; header: SafetensorsHeader };
      return readTensor(src.fh, src.file, src.header.dataStart, at.e);
    },
    close: async () => {
      for (const { fh } of handles) await fh.close();
    },
  };
}
