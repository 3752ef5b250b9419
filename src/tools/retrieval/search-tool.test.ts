import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../config/schema.ts';
import type { Episode } from '../../data/episode.ts';
import { tempDir } from '../../../test/retrieval/corpora.ts';
import { close, listen } from '../../../test/retrieval/http.ts';
import { closeCodeSandbox } from '../code.ts';
import { createWorkerTools } from '../registry.ts';
import { Bm25Index } from './bm25-index.ts';
import { buildIndex } from './build-index.ts';
import { createRetrievalServer } from './server.ts';
import { writeFileSync } from 'node:fs';
import type { Server } from 'node:http';

const episode: Episode = {
  id: 'e1',
  question: 'Which country is Tusko located in?',
  answers: ['Brelia'],
  paragraphs: [
    { idx: 0, title: 'Kelmar', text: 'Kelmar is a city located in Tavonia.', isSupporting: false },
    { idx: 1, title: 'Tusko', text: 'Tusko is a city located in Brelia. It lies on a river.', isSupporting: true },
    { idx: 2, title: 'Brelia', text: 'Brelia is a country. Its capital is Tusko.', isSupporting: false },
  ],
};
const other: Episode = {
  id: 'e2',
  question: 'q',
  answers: ['x'],
  paragraphs: [{ idx: 0, title: 'Orvane', text: 'Orvane is a city located in Tusko county.' }],
};

describe('search backends: episode, index, remote', () => {
  let dir: string;
  let server: Server;
  let url: string;
  let index: Bm25Index;
  beforeAll(async () => {
    dir = tempDir();
    // The two episodes as a MuSiQue file: the index pools their paragraphs (MuSiQue's open setting).
    const rec = (e: Episode): string =>
      JSON.stringify({
        id: e.id,
        question: e.question,
        paragraphs: e.paragraphs.map((p) => ({ idx: p.idx, title: p.title, paragraph_text: p.text })),
      });
    writeFileSync(join(dir, 'm.jsonl'), `${rec(episode)}\n${rec(other)}\n`);
    await buildIndex({ corpus: join(dir, 'm.jsonl'), out: join(dir, 'idx') });
    index = new Bm25Index(join(dir, 'idx'));
    server = createRetrievalServer(index);
    url = await listen(server);
  });
  afterAll(async () => {
    await close(server);
    index.close();
    await closeCodeSandbox();
  });

  const tools = (search: Record<string, unknown>) =>
    createWorkerTools(
      episode,
      configSchema.parse({ rollout: { search: { topK: 2, maxChars: 30, ...search } } }).rollout,
    );

  it('shows the agent the same lines from all three, and records idx (and corpus ids)', async () => {
    const q = 'Which country is Tusko located in?';
    const viaEpisode = await tools({}).search(q);
    const viaIndex = await tools({ backend: 'index', index: join(dir, 'idx') }).search(q);
    const viaRemote = await tools({ backend: 'remote', url, timeoutMs: 2000, retries: 0 }).search(q);
    // Episode: minisearch over the episode's 3 paragraphs, labels are idx values.
    expect(viaEpisode).toEqual({
      ok: true,
      output: '[1] Tusko: Tusko is a city located in...\n[2] Brelia: Brelia is a country. Its ca...',
      retrievedIdx: [1, 2],
    });
    // Index: FTS5 over the 4 pooled paragraphs (corpus ids 0-3 in file order). Of the query's words
    // (is, in: stopwords) only "country" is in fewer than half of them (idf ln(3.5 / 1.5)); tusko and
    // located are in 3 of 4 (idf floored at 1e-6), so Brelia comes first, then Tusko.
    expect(viaIndex).toEqual({
      ok: true,
      output: '[2] Brelia: Brelia is a country. Its ca...\n[1] Tusko: Tusko is a city located in...',
      retrievedIdx: [2, 1],
      retrievedIds: ['2', '1'],
    });
    // Orvane (corpus id 3) is not one of the episode's paragraphs: an id, no idx.
    expect(await tools({ backend: 'index', index: join(dir, 'idx') }).search('Orvane')).toMatchObject({
      retrievedIdx: [],
      retrievedIds: ['3'],
    });
    // Remote: the same index through the Search-R1 protocol gives the same outcome.
    expect(viaRemote).toEqual(viaIndex);
  });

  it('applies snippet to corpus hits as to episode hits', async () => {
    const out = await tools({ backend: 'index', index: join(dir, 'idx'), snippet: 1, maxChars: 200 }).search(
      'lies on a river',
    );
    expect(out.output.split('\n')[0]).toBe('[1] Tusko: It lies on a river.');
  });

  it('turns a backend failure into an invalid call with one line, not a thrown error', async () => {
    const gone = createRetrievalServer(index);
    const goneUrl = await listen(gone);
    await close(gone);
    const down = await tools({ backend: 'remote', url: goneUrl, timeoutMs: 500, retries: 0 }).search('Tusko');
    expect(down).toEqual({
      ok: false,
      output: `search error: retriever ${goneUrl}: cannot connect (ECONNREFUSED) (1 try)`,
    });
    expect(await tools({ backend: 'index', index: join(dir, 'idx') }).search('  ')).toEqual({
      ok: false,
      output: 'search error: empty query',
    });
  });

  it('stops with one line when the index is missing', () => {
    expect(() => tools({ backend: 'index', index: join(dir, 'absent') })).toThrow(/index .*absent: not found/);
  });
});
