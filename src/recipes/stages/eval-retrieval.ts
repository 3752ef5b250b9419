/**
 * What `sharp eval` searches (docs/retrieval.md): the episode's own paragraphs (default), one index
 * of every paragraph of the evaluated file (`--retrieval open`, MuSiQue's open-domain setting;
 * built once into <out>/open-index and rebuilt when the file changes), a given index (`--index`) or
 * a Search-R1 server (`--retriever`). Returns the rollout config to run with and, for any backend
 * but the episode's, a line for the eval's setup manifest (a resumed eval must search the same way).
 */
import { join, resolve } from 'node:path';
import type { Config } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { readManifest } from '../../tools/retrieval/bm25-index.ts';
import { buildIndex } from '../../tools/retrieval/build-index.ts';
import { fileSha256 } from '../../tools/retrieval/corpus.ts';
import { checkRetriever } from '../../tools/retrieval/open.ts';

export interface EvalRetrievalFlags {
  retrieval?: 'episode' | 'open';
  index?: string;
  retriever?: string;
}

type Rollout = Config['rollout'];

export async function evalRetrieval(
  flags: EvalRetrievalFlags,
  rollout: Rollout,
  dataFile: string,
  out: string,
): Promise<{ rollout: Rollout; setup?: string }> {
  const given = [
    flags.retrieval === 'open' ? '--retrieval open' : '',
    flags.index ? '--index' : '',
    flags.retriever ? '--retriever' : '',
  ].filter(Boolean);
  if (given.length > 1)
    throw new UserError(`eval: ${given.join(' and ')} exclude each other (one search backend per run)`);
  let search: Rollout['search'] = rollout.search;
  let setup: string | undefined;
  if (flags.retrieval === 'open') {
    const dir = join(out, 'open-index');
    const m = readManifest(dir);
    if (!m || m.corpus.sha256 !== fileSha256(dataFile)) {
      process.stderr.write(`sharp eval: pooling the paragraphs of ${dataFile} into ${dir}\n`);
      await buildIndex({ corpus: dataFile, out: dir });
    }
    search = { ...search, backend: 'index', index: dir };
    setup = 'open';
  } else if (flags.index) {
    search = { ...search, backend: 'index', index: resolve(flags.index) };
  } else if (flags.retriever) {
    search = { ...search, backend: 'remote', url: flags.retriever };
  }
  if (search.backend === 'index') setup ??= `index ${resolve(search.index)}`;
  if (search.backend === 'remote') setup = `remote ${search.url}`;
  await checkRetriever(search);
  return { rollout: { ...rollout, search }, ...(setup ? { setup } : {}) };
}
