import { describe, it, expect } from 'vitest';
import { crc32c, maskedCrc32c } from './crc32c.ts';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('crc32c', () => {
  it('matches the standard check values', () => {
    expect(crc32c(bytes('123456789'))).toBe(0xe3069283); // RFC 3720 / the CRC catalogue check value
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa); // RFC 3720 B.4: 32 bytes of zeros
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43); // RFC 3720 B.4: 32 bytes of 0xff
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it('masks as TensorFlow does', () => {
    // crc = 0xE3069283: rotate right by 15 -> 0x2507C60D; + 0xA282EAD8 = 0xC78AB0E5 (mod 2^32)
    expect(maskedCrc32c(bytes('123456789'))).toBe(0xc78ab0e5);
  });
});
