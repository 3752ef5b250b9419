import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Episode, Paragraph } from '../data/episode.ts';
import { createPooledSearch, createSearch, formatHit, poolParagraphs } from './search.ts';

const paragraphs: Paragraph[] = [
  {
    idx: 0,
    title: 'Zorvex Labs',
    text: 'Zorvex Labs is a robotics company founded in 1987 by Dara Velm. It is headquartered in Kelmar.',
  },
  { idx: 1, title: 'Dara Velm', text: 'Dara Velm is an engineer. Dara Velm was born in Tusko in 1950.' },
  { idx: 2, title: 'Kelmar', text: 'Kelmar is a city located in Tavonia. The mayor of Kelmar is Orin Task.' },
  { idx: 3, title: 'Tusko', text: 'Tusko is a city located in Brelia.' },
];

describe('search tool', () => {
  it('ranks the paragraph that answers the query first and records idx in rank order', async () => {
    const search = createSearch(paragraphs, { topK: 2, maxChars: 300 });
    const r = await search('In which city was Dara Velm born?');
    expect(r.ok).toBe(true);
    // Dara Velm's own paragraph (title + "born") outranks Zorvex Labs, which only mentions the name.
    expect(r.retrievedIdx).toEqual([1, 0]);
    expect(r.output).toBe(
      '[1] Dara Velm: Dara Velm is an engineer. Dara Velm was born in Tusko in 1950.\n[0] Zorvex Labs: Zorvex Labs ' +
        'is a robotics company founded in 1987 by Dara Velm. It is headquartered in Kelmar.',
    );
  });

  it('returns at most topK hits and an ok empty result when nothing matches', async () => {
    const search = createSearch(paragraphs, { topK: 1, maxChars: 300 });
    expect((await search('Kelmar')).retrievedIdx).toEqual([2]);
    expect(await search('quantum chromodynamics')).toEqual({
      ok: true,
      output: 'No paragraph matched the query.',
      retrievedIdx: [],
    });
  });

  it('answers an empty query with an error outcome', async () => {
    const search = createSearch(paragraphs, { topK: 2, maxChars: 300 });
    expect(await search('   ')).toEqual({ ok: false, output: 'search error: empty query' });
  });

  it('cuts long texts to maxChars', () => {
    expect(formatHit({ idx: 7, title: 'T', text: 'abcdefghij  klmnop' }, 10)).toBe('[7] T: abcdefg...');
    expect(formatHit({ idx: 7, title: 'T', text: 'short\ntext' }, 10)).toBe('[7] T: short text');
  });

  it('rejects a corpus with duplicate idx where the tool is made', () => {
    expect(() => createSearch([paragraphs[0], { ...paragraphs[1], idx: 0 }], { topK: 2, maxChars: 300 })).toThrow(
      "search: duplicate paragraph idx 0 (title 'Dara Velm')",
    );
  });

  it('pools episodes, dropping duplicate paragraphs and mapping ids back to episode idx', async () => {
    const a: Episode = { id: 'a', question: 'q', answers: ['x'], paragraphs: paragraphs.slice(0, 2) };
    const b: Episode = {
      id: 'b',
      question: 'q',
      answers: ['x'],
      paragraphs: [
        { ...paragraphs[1], idx: 0 },
        { ...paragraphs[3], idx: 1 },
      ],
    };
    const pool = poolParagraphs([a, b]);
    expect(pool.paragraphs.map((p) => [p.idx, p.title])).toEqual([
      [0, 'Zorvex Labs'],
      [1, 'Dara Velm'],
      [2, 'Tusko'],
    ]);
    expect(pool.origin.get(1)).toEqual([
      { episodeId: 'a', idx: 1 },
      { episodeId: 'b', idx: 0 },
    ]);
    const search = createPooledSearch(pool, { topK: 1, maxChars: 300 });
    expect((await search('Which country is Tusko located in?')).retrievedIdx).toEqual([2]);
  });

  const musique = fileURLToPath(new URL('../../../shared/data/musique/musique_ans_train_100.jsonl', import.meta.url));
  it.skipIf(!existsSync(musique))(
    'finds real MuSiQue support paragraphs for most single-hop questions (top 5)',
    async () => {
      // Real text sanity check: only hops without #k references (the first hop of each record).
      let hit = 0;
      let total = 0;
      for (const line of readFileSync(musique, 'utf8').trim().split('\n')) {
        const r = JSON.parse(line) as {
          paragraphs: { idx: number; title: string; paragraph_text: string }[];
          question_decomposition: { question: string; paragraph_support_idx: number }[];
        };
        const search = createSearch(
          r.paragraphs.map((p) => ({ idx: p.idx, title: p.title, text: p.paragraph_text })),
          { topK: 5, maxChars: 300 },
        );
        const hop = r.question_decomposition[0];
        const out = await search(hop.question);
        total++;
        if (out.retrievedIdx?.includes(hop.paragraph_support_idx)) hit++;
      }
      expect(total).toBe(100);
      // Measured: 0.95 at top 5 (0.89 at top 2, 0.83 at top 1); chance is 5/20 = 0.25.
      expect(hit / total).toBeGreaterThanOrEqual(0.9);
    },
  );
});
