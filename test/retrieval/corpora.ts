/** Test support of the retrieval tests: temp folders and small corpora in Search-R1's JSONL format. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tempDir(prefix = 'sharp-retrieval-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** `[title, text]` pairs as a Search-R1 corpus file `{id: "p<i>", contents: "\"Title\"\ntext"}`. */
export function writeCorpus(
  dir: string,
  passages: readonly (readonly [string, string])[],
  name = 'corpus.jsonl',
): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    passages.map(([title, text], i) => JSON.stringify({ id: `p${i}`, contents: `"${title}"\n${text}` })).join('\n') +
      '\n',
  );
  return file;
}

/**
 * Six passages whose BM25 scores bm25-index.test.ts computes by hand: lengths (title + text
 * tokens) 3, 4, 2, 6, 2, 3, so N = 6 and avgdl = 20 / 6.
 */
export const TINY: readonly (readonly [string, string])[] = [
  ['Alpha', 'cat dog'],
  ['Beta', 'dog dog bird'],
  ['Gamma', 'fish'],
  ['Delta', 'cat cat cat cat fish'],
  ['Epsilon', 'tree'],
  ['Zeta', 'rock tree'],
];
