import { resolve } from 'node:path';
import { Bm25Index, indexBytes, requireManifest } from '../tools/retrieval/bm25-index.ts';
import type { IndexInfoFlags } from './commands.ts';

/** `sharp index info DIR`: what an index holds and how it was built (its manifest, checked by opening it). */

const mib = (b: number): string => (b < 1 << 20 ? `${(b / 1024).toFixed(1)} KiB` : `${(b / (1 << 20)).toFixed(1)} MiB`);

export function infoLines(dir: string): string[] {
  const m = requireManifest(dir);
  // Opening proves the database is readable, not only that the manifest is there.
  new Bm25Index(dir).close();
  return [
    `index      ${resolve(dir)}`,
    `passages   ${m.passages}`,
    `size       ${mib(indexBytes(dir))}`,
    `tokenizer  FTS5 ${m.tokenizer}`,
    `bm25       k1 ${m.bm25.k1}, b ${m.bm25.b} (SQLite ${m.sqlite})`,
    `corpus     ${m.corpus.file} (${m.corpus.kind}, ${m.corpus.records} records, ${mib(m.corpus.bytes)})`,
    `sha256     ${m.corpus.sha256}`,
    `built      ${m.builtAt} in ${m.buildSeconds} s`,
  ];
}

export function run(opts: IndexInfoFlags): Promise<void> {
  process.stdout.write(`${infoLines(opts.dir).join('\n')}\n`);
  return Promise.resolve();
}
