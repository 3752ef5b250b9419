import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharp } from '../../test/retrieval/cli.ts';
import { close, listen } from '../../test/retrieval/http.ts';
import { tempDir } from '../../test/retrieval/corpora.ts';
import { configSchema } from '../config/schema.ts';
import { createRetrievalServer } from '../tools/retrieval/server.ts';
import { evalRetrieval } from './stages/eval-retrieval.ts';

const QUESTIONS = resolve(import.meta.dirname, '../../data/retrieval/synth_questions.jsonl');
const CORPUS = resolve(import.meta.dirname, '../../data/retrieval/synth_corpus.jsonl');

describe('sharp eval over a corpus', () => {
  it('--retrieval open pools the file into an index, reports recall@k, and a resume must search the same way', async () => {
    const out = join(tempDir(), 'eval');
    const args = [
      'eval',
      '--bench',
      'musique',
      '--data',
      QUESTIONS,
      '--policy',
      'expert',
      '--limit',
      '4',
      '--out',
      out,
    ];
    const r = await sharp([...args, '--retrieval', 'open']);
    expect(r.code).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'metrics.json'), 'utf8')) as {
      metrics: Record<string, number>;
      retrieval: Record<string, number>;
      settings: Record<string, unknown>;
    };
    // The scripted expert follows the gold decomposition; every supporting paragraph is among its searches' top 2.
    expect(report.metrics).toMatchObject({ answer_em: 1 });
    expect(report.retrieval).toEqual({ 'recall@2': 1 });
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain(
      '## Retrieval\n\n| metric | value |\n| --- | --- |\n| recall@2 | 1 |',
    );
    expect(report.settings.retrieval).toBe('open');
    expect(JSON.parse(readFileSync(join(out, 'open-index', 'index.json'), 'utf8'))).toMatchObject({
      passages: 800,
      corpus: { kind: 'paragraphs', records: 40 },
    });
    const again = await sharp(args);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/holds predictions of another setup \(retrieval: "open" there, undefined now\)/);
  }, 180_000);

  it('stops in one line when the retriever is down or two backends are asked for', async () => {
    const gone = createRetrievalServer({ name: 'x', search: () => Promise.resolve([]) });
    const url = await listen(gone);
    await close(gone);
    const down = await sharp([
      'eval',
      '--bench',
      'musique',
      '--data',
      QUESTIONS,
      '--policy',
      'expert',
      '--limit',
      '1',
      '--out',
      join(tempDir(), 'e'),
      '--retriever',
      url,
      '--set',
      'rollout.search.retries=0',
    ]);
    expect([down.code, down.stderr]).toEqual([
      2,
      `sharp: rollout.search: retriever ${url}: cannot connect (ECONNREFUSED) (1 try)\n`,
    ]);
    const both = await sharp([
      'eval',
      '--bench',
      'musique',
      '--policy',
      'expert',
      '--index',
      'x',
      '--retrieval',
      'open',
      '--out',
      join(tempDir(), 'e'),
    ]);
    expect([both.code, both.stderr]).toEqual([
      2,
      'sharp: eval: --retrieval open and --index exclude each other (one search backend per run)\n',
    ]);
  }, 120_000);

  it('--index and --retriever set the search backend of the run', async () => {
    const dir = tempDir();
    const rollout = configSchema.parse({}).rollout;
    await expect(evalRetrieval({ index: join(dir, 'none') }, rollout, QUESTIONS, dir)).rejects.toThrow(/not found/);
    const built = await sharp(['index', 'build', '--corpus', CORPUS, '--out', join(dir, 'idx')]);
    expect(built.code).toBe(0);
    const viaIndex = await evalRetrieval({ index: join(dir, 'idx') }, rollout, QUESTIONS, dir);
    expect(viaIndex.rollout.search).toMatchObject({ backend: 'index', index: join(dir, 'idx') });
    expect(viaIndex.setup).toBe(`index ${join(dir, 'idx')}`);
    const server = createRetrievalServer({ name: 'empty', search: (qs) => Promise.resolve(qs.map(() => [])) });
    const url = await listen(server);
    try {
      const viaRemote = await evalRetrieval({ retriever: url }, rollout, QUESTIONS, dir);
      expect(viaRemote).toEqual({
        rollout: { ...rollout, search: { ...rollout.search, backend: 'remote', url } },
        setup: `remote ${url}`,
      });
    } finally {
      await close(server);
    }
    expect(await evalRetrieval({}, rollout, QUESTIONS, dir)).toEqual({ rollout });
  }, 120_000);
});
