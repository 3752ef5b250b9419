import { resolve } from 'node:path';
import { createByteProgress } from '../run/byte-progress.ts';
import { indexBytes } from '../tools/retrieval/bm25-index.ts';
import { buildIndex } from '../tools/retrieval/build-index.ts';
import type { IndexBuildFlags } from './commands.ts';

/**
 * `sharp index build --corpus F --out DIR`: the on-disk BM25 index of a corpus
 * (tools/retrieval/build-index.ts; docs/retrieval.md), with a progress bar on a TTY.
 */

const mib = (b: number): string => (b < 1 << 20 ? `${(b / 1024).toFixed(1)} KiB` : `${(b / (1 << 20)).toFixed(1)} MiB`);

export async function run(opts: IndexBuildFlags): Promise<void> {
  let progress: ReturnType<typeof createByteProgress> | undefined;
  try {
    const m = await buildIndex({
      corpus: opts.corpus,
      out: opts.out,
      onProgress: (p) => {
        progress ??= createByteProgress({ total: p.totalBytes, label: 'index', unit: 'passages' });
        progress.update(p.bytes, p.passages);
      },
    });
    progress?.stop();
    process.stdout.write(
      `index ${resolve(opts.out)}: ${m.passages} passages from ${m.corpus.records} records (${m.corpus.kind}) in ` +
        `${m.buildSeconds} s, ${mib(indexBytes(opts.out))}\n`,
    );
  } finally {
    progress?.stop();
  }
}
