/**
 * The safetensors header (https://github.com/huggingface/safetensors, "Format"): an u64
 * little-endian length N, N bytes of JSON `{name: {dtype, shape, data_offsets: [begin, end]}}` plus an
 * optional `__metadata__` string map, then the raw data; offsets are relative to the data section.
 * Validation follows the reference Rust reader: offsets must tile the data section exactly (no
 * overlap, no gap, no trailing bytes) and each span must equal prod(shape) * sizeof(dtype).
 */
import { DTYPE_BYTES, isDiskDtype, type DiskDtype } from './dtype.ts';
import { CheckpointError } from './errors.ts';

/** Largest header the reference implementation accepts (safetensors MAX_HEADER_SIZE). */
const MAX_HEADER_BYTES = 100_000_000;

export interface TensorEntry {
  name: string;
  dtype: DiskDtype;
  shape: number[];
  /** Byte offsets into the data section, end exclusive. */
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  /** Entries in data order (ascending `begin`). */
  entries: TensorEntry[];
  metadata: Record<string, string>;
  /** Absolute file offset where the data section starts (8 + header length). */
  dataStart: number;
}

/** Number of elements of a shape (1 for a scalar `[]`). */
export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isNonNegInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * Validates the 8-byte length prefix against the file size. Returns the header length N.
 * `prefix` holds the first min(8, fileBytes) bytes of the file.
 */
export function checkHeaderLength(file: string, prefix: Uint8Array, fileBytes: number): number {
  if (fileBytes < 8)
    throw new CheckpointError(
      `${file}: truncated file (${fileBytes} bytes; a safetensors file starts with an 8-byte header length)`,
    );
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(fileBytes - 8))
    throw new CheckpointError(`${file}: header length ${n} runs past the end of the file (${fileBytes} bytes)`);
  if (n > BigInt(MAX_HEADER_BYTES))
    throw new CheckpointError(`${file}: header length ${n} exceeds the ${MAX_HEADER_BYTES}-byte limit of the format`);
  return Number(n);
}

/**
 * Parses and validates the header JSON. `dataBytes` is the size of the data section
 * (file size - 8 - N). Throws a one-line CheckpointError naming the file and tensor on any defect.
 */
export function parseHeader(file: string, json: string, headerBytes: number, dataBytes: number): SafetensorsHeader {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new CheckpointError(`${file}: header is not valid JSON (${(err as Error).message.split('\n')[0]})`);
  }
  if (!isRecord(raw)) throw new CheckpointError(`${file}: header is not a JSON object`);
  const metadata: Record<string, string> = {};
  const entries: TensorEntry[] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (name === '__metadata__') {
      if (!isRecord(value)) throw new CheckpointError(`${file}: __metadata__ is not an object of strings`);
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== 'string') throw new CheckpointError(`${file}: __metadata__ key '${k}' is not a string`);
        metadata[k] = v;
      }
      continue;
    }
    entries.push(parseEntry(file, name, value));
  }
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let pos = 0;
  let prev: TensorEntry | undefined;
  for (const e of entries) {
    if (e.begin < pos)
      throw new CheckpointError(
        `${file}: tensor '${e.name}': data_offsets [${e.begin}, ${e.end}] overlap tensor '${prev?.name}' (which ` +
          `ends at ${pos})`,
      );
    if (e.begin > pos)
      throw new CheckpointError(
        `${file}: tensor '${e.name}': data_offsets [${e.begin}, ${e.end}] leave a gap of ${e.begin - pos} bytes ` +
          `after ${prev ? `tensor '${prev.name}'` : 'the header'}`,
      );
    if (e.end > dataBytes) {
      throw new CheckpointError(
        `${file}: truncated file: tensor '${e.name}' data_offsets [${e.begin}, ${e.end}] run past the data ` +
          `section (${dataBytes} bytes)`,
      );
    }
    pos = e.end;
    prev = e;
  }
  if (pos !== dataBytes)
    throw new CheckpointError(
      `${file}: ${dataBytes - pos} bytes after the last tensor are not described by the header`,
    );
  return { entries, metadata, dataStart: 8 + headerBytes };
}

function parseEntry(file: string, name: string, value: unknown): TensorEntry {
  const where = `${file}: tensor '${name}'`;
  if (!isRecord(value)) throw new CheckpointError(`${where}: header entry is not an object`);
  const { dtype, shape, data_offsets: offsets } = value;
  if (!isDiskDtype(dtype))
    throw new CheckpointError(`${where}: unknown dtype ${JSON.stringify(dtype)} (supported: F32, F16, BF16)`);
  if (!Array.isArray(shape) || !shape.every(isNonNegInt))
    throw new CheckpointError(`${where}: shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isNonNegInt) || offsets[0] > offsets[1]) {
    throw new CheckpointError(
      `${where}: data_offsets ${JSON.stringify(offsets)} are not [begin, end] with 0 <= begin <= end`,
    );
  }
  const [begin, end] = offsets as [number, number];
  const need = numel(shape as number[]) * DTYPE_BYTES[dtype];
  if (end - begin !== need) {
    throw new CheckpointError(
      `${where}: data_offsets [${begin}, ${end}] span ${end - begin} bytes but shape ` +
        `[${(shape as number[]).join(', ')}] x ${dtype} needs ${need}`,
    );
  }
  return { name, dtype, shape: shape as number[], begin, end };
}

/**
 * Builds the header bytes for tensors written in the given order, padded with spaces to a multiple
 * of 8 bytes as the reference writer does (so the data section stays 8-byte aligned).
 */
export function buildHeader(entries: readonly TensorEntry[], metadata?: Record<string, string>): Uint8Array {
  // Built by hand, not JSON.stringify(object): JS objects move integer-like keys first, which would
  // reorder a tensor named "0". __metadata__ goes last, as in the HF-written checkpoints we compare
  // with byte for byte (readers accept any order).
  const parts = entries.map(
    (e) =>
      `${JSON.stringify(e.name)}:${JSON.stringify({ dtype: e.dtype, shape: e.shape, data_offsets: [e.begin, e.end] })}`,
  );
  if (metadata && Object.keys(metadata).length > 0) parts.push(`"__metadata__":${JSON.stringify(metadata)}`);
  const json = Buffer.from(`{${parts.join(',')}}`, 'utf8');
  const padded = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + padded).fill(0x20);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded), true);
  out.set(json, 8);
  return out;
}
