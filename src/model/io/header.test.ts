import { describe, it, expect } from 'vitest';
import { buildHeader, checkHeaderLength, numel, parseHeader } from './header.ts';

describe('safetensors header (pure)', () => {
  it('builds a space-padded header that parses back to the same entries', () => {
    const entries = [
      { name: '0', dtype: 'F32' as const, shape: [2], begin: 0, end: 8 }, // integer-like name keeps its place
      { name: 'b', dtype: 'BF16' as const, shape: [1, 3], begin: 8, end: 14 },
    ];
    const bytes = buildHeader(entries, { format: 'pt' });
    const n = checkHeaderLength('f', bytes.subarray(0, 8), bytes.length + 14);
    expect(n % 8).toBe(0);
    expect(bytes.length).toBe(8 + n);
    const json = Buffer.from(bytes.subarray(8)).toString();
    expect(json.trimEnd()).toBe(
      '{"0":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[1,3],"data_offsets":[8,' +
        '14]},"__metadata__":{"format":"pt"}}',
    );
    const h = parseHeader('f', json, n, 14);
    expect(h.entries).toEqual(entries);
    expect(h.metadata).toEqual({ format: 'pt' });
    expect(h.dataStart).toBe(8 + n);
  });

  it('counts elements of scalars and empty tensors', () => {
    expect(numel([])).toBe(1);
    expect(numel([0, 5])).toBe(0);
    expect(numel([2, 3, 4])).toBe(24);
  });

  it('rejects a header length over the format limit', () => {
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, 200_000_000n, true);
    expect(() => checkHeaderLength('big', prefix, 300_000_000)).toThrow(
      'big: header length 200000000 exceeds the 100000000-byte limit of the format',
    );
  });

  it('accepts tensors listed out of order and zero-size tensors between them', () => {
    const json = JSON.stringify({
      z: { dtype: 'F16', shape: [2], data_offsets: [4, 8] },
      e: { dtype: 'F32', shape: [0], data_offsets: [4, 4] },
      a: { dtype: 'F16', shape: [2], data_offsets: [0, 4] },
    });
    expect(parseHeader('f', json, json.length, 8).entries.map((e) => e.name)).toEqual(['a', 'e', 'z']);
  });
});
