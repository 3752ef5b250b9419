/**
 * FNV-1a (32 bit) of a string as an unsigned integer: a stable hash for seeds and partitions, independent of any RNG.
 */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** FNV-1a followed by MurmurHash3's finaliser: keys that differ in one character give unrelated seeds. */
export function mixedHash32(s: string): number {
  let h = fnv1a32(s);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}
