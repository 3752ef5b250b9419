/**
 * Test support: a large generated corpus in Search-R1's JSONL format, written in pieces (never all in
 * memory). Every passage holds a few of COMMON_WORDS (each word in about a third of the passages), so a
 * query of those words makes FTS5 score most of the index: the slowest request a client can send.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Words each found in about a third of the passages. */
export const COMMON_WORDS: readonly string[] = Array.from({ length: 32 }, (_, i) => `common${i}`);

/** A small deterministic generator (mulberry32): the same corpus on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Writes `n` passages to `dir/name`; returns the file. */
export function writeLargeCorpus(dir: string, n: number, name = 'large.jsonl'): string {
  const file = join(dir, name);
  const fd = openSync(file, 'w');
  const rand = rng(7);
  try {
    let lines: string[] = [];
    for (let i = 0; i < n; i++) {
      const words: string[] = [];
      for (const w of COMMON_WORDS) if (rand() < 0.33) words.push(w);
      for (let j = 0; j < 12; j++) words.push(`word${Math.floor(rand() * 50_000)}`);
      lines.push(JSON.stringify({ id: `d${i}`, contents: `"Passage ${i}"\n${words.join(' ')}` }));
      if (lines.length === 5000) {
        writeSync(fd, `${lines.join('\n')}\n`);
        lines = [];
      }
    }
    if (lines.length > 0) writeSync(fd, `${lines.join('\n')}\n`);
  } finally {
    closeSync(fd);
  }
  return file;
}
