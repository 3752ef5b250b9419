/** FNV-1a (32 bit) of a string as an unsigned integer: a stable hash for seeds and partitions, independent of any RNG. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
