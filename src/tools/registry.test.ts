import { afterAll, describe, expect, it } from 'vitest';
import { configSchema } from '../config/schema.ts';
import type { Episode } from '../data/episode.ts';
import { closeCodeSandbox } from './code.ts';
import { createWorkerTools } from './registry.ts';
import { poolParagraphs } from './search.ts';

afterAll(async () => {
  await closeCodeSandbox();
});

const episode: Episode = {
  id: 'e1',
  question: 'q',
  answers: ['a'],
  paragraphs: [
    { idx: 0, title: 'Kelmar', text: 'Kelmar is a city located in Tavonia.' },
    { idx: 1, title: 'Tusko', text: 'Tusko is a city located in Brelia.' },
    { idx: 2, title: 'Brelia', text: 'Brelia is a country. Its capital is Tusko.' },
  ],
};

describe('createWorkerTools', () => {
  it('wires search (episode corpus, config topK/maxChars), calculate and code', async () => {
    const cfg = configSchema.parse({
      rollout: { search: { topK: 1, maxChars: 12 }, code: { timeoutMs: 300 } },
    }).rollout;
    const tools = createWorkerTools(episode, cfg);
    expect(Object.keys(tools).sort()).toEqual(['calculate', 'code', 'search']);
    // topK 1 and maxChars 12 from the config: the text is cut to 9 characters ('Tusko is '), trimmed, + '...'.
    expect(await tools.search('Which country is Tusko located in?')).toEqual({
      ok: true,
      output: '[1] Tusko: Tusko is...',
      retrievedIdx: [1],
    });
    expect(await tools.calculate('2026 - 1987')).toEqual({ ok: true, output: '39' });
    expect(await tools.code('while (true) {}')).toEqual({
      ok: false,
      output: 'code error: timeout: program ran longer than 300 ms',
    });
  });

  it('searches the pooled corpus when configured, and says so when none is given', async () => {
    const cfg = configSchema.parse({ rollout: { search: { corpus: 'pooled', topK: 1 } } }).rollout;
    const other: Episode = {
      ...episode,
      id: 'e2',
      paragraphs: [{ idx: 0, title: 'Orvane', text: 'Orvane is a city located in Tavonia.' }],
    };
    const pooled = poolParagraphs([episode, other]);
    const tools = createWorkerTools(episode, cfg, { pooled });
    // Orvane is not in episode e1's paragraphs; the pooled corpus numbers it 3.
    expect((await tools.search('Orvane')).retrievedIdx).toEqual([3]);
    expect(() => createWorkerTools(episode, cfg)).toThrow(
      "createWorkerTools: rollout.search.corpus is 'pooled' but no pooled corpus was given",
    );
  });
});
