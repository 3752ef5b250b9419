import { describe, expect, it } from 'vitest';
import { fnv1a32, mixedHash32 } from './hash.ts';

describe('fnv1a32', () => {
  it('matches the published FNV-1a test vectors', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });
});

describe('mixedHash32', () => {
  it('is FNV-1a through the MurmurHash3 finaliser (values computed by hand in Python)', () => {
    expect(mixedHash32('')).toBe(0xab3e7c0b);
    expect(mixedHash32('a')).toBe(0x1a80b1b3);
    expect(mixedHash32('foobar')).toBe(0xc0da6dc);
  });
});
