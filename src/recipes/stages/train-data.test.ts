import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../config/schema.ts';
import { readUserJsonl } from '../../data/readers/user-jsonl.ts';
import { generateSynth } from '../../data/synth/generate.ts';
import { namePool } from '../../data/synth/names.ts';
import { UserError } from '../../errors.ts';
import { firstTrainEpisodes, loadTrainData } from './train-data.ts';

const dataCfg = (d: Record<string, unknown>) => configSchema.parse({ data: d }).data;

describe('loadTrainData', () => {
  it('synthetic, fresh worlds (default): no name of a held-out episode occurs in any training episode', () => {
    const world = { countries: 3, cities: 6, people: 14, companies: 6 };
    const { train, heldOut } = loadTrainData(
      dataCfg({ synthetic: { seed: 4, train: 300, heldOut: 60, minHops: 2, maxHops: 3, world } }),
    );
    expect(train).toHaveLength(300);
    expect(heldOut).toHaveLength(60);
    // Every capitalised word of the paragraphs and questions, minus the templates' own words.
    const templateWords = new Set([
      'By',
      'The',
      'Labs',
      'Works',
      'Group',
      'Systems',
      'Industries',
      'In',
      'What',
      'Who',
      'Which',
      'How',
    ]);
    const words = (eps: typeof train) =>
      new Set(
        eps
          .flatMap(
            (e) =>
              [e.question, ...e.paragraphs.map((p) => `${p.title} ${p.text}`)].join(' ').match(/\b[A-Z][a-z]+\b/g) ??
              [],
          )
          .filter((w) => !templateWords.has(w)),
      );
    const trainWords = words(train);
    const heldOutWords = words(heldOut);
    expect(heldOutWords.size).toBeGreaterThan(500);
    expect([...heldOutWords].filter((w) => trainWords.has(w))).toEqual([]);
    // Each training episode has a world of its own: its names recur in few other episodes.
    const titles = new Map<string, number>();
    for (const e of train) for (const p of e.paragraphs) titles.set(p.title, (titles.get(p.title) ?? 0) + 1);
    expect(Math.max(...titles.values())).toBeLessThanOrEqual(3);
    // The first k episodes do not depend on n.
    const fewer = loadTrainData(
      dataCfg({ synthetic: { seed: 4, train: 5, heldOut: 2, minHops: 2, maxHops: 3, world } }),
    );
    expect(fewer.train.map((e) => e.id)).toEqual(train.slice(0, 5).map((e) => e.id));
    expect(fewer.heldOut.map((e) => e.id)).toEqual(heldOut.slice(0, 2).map((e) => e.id));
  });

  it('synthetic, fresh worlds from a name pool: words recur, but no held-out person or company occurs in training', () => {
    const world = { countries: 3, cities: 6, people: 14, companies: 6 };
    const { train, heldOut } = loadTrainData(
      dataCfg({ synthetic: { seed: 4, train: 300, heldOut: 60, minHops: 2, maxHops: 3, world, namePool: 400 } }),
    );
    const pool = new Set(namePool(400));
    const multiWord = (eps: typeof train) =>
      new Set(eps.flatMap((e) => e.paragraphs.map((p) => p.title)).filter((t) => t.includes(' ')));
    const trainNames = multiWord(train);
    expect([...multiWord(heldOut)].filter((n) => trainNames.has(n))).toEqual([]);
    // Every name word is a pool word, and pool words recur across episodes in other roles.
    const words = train
      .flatMap((e) => e.paragraphs.flatMap((p) => p.title.split(' ')))
      .filter((w) => !['Labs', 'Works', 'Group', 'Systems', 'Industries'].includes(w));
    expect(words.every((w) => pool.has(w))).toBe(true);
    expect(new Set(words).size).toBeLessThanOrEqual(400);
  });

  it(
    'synthetic, shared world: train and held-out are one generator call split in two (same world, disjoint ' +
      'questions)',
    () => {
      const { train, heldOut } = loadTrainData(
        dataCfg({ synthetic: { seed: 4, train: 10, heldOut: 3, minHops: 2, maxHops: 3, worlds: 'shared' } }),
      );
      expect(train).toHaveLength(10);
      expect(heldOut).toHaveLength(3);
      const all = generateSynth({ seed: 4, n: 13, minHops: 2, maxHops: 3 });
      expect(train.map((e) => e.id)).toEqual(all.slice(0, 10).map((r) => r.id));
      expect(heldOut.map((e) => e.id)).toEqual(all.slice(10).map((r) => r.id));
      const trainIds = new Set(train.map((e) => e.id));
      expect(heldOut.some((e) => trainIds.has(e.id))).toBe(false);
      // Same world: a held-out question's paragraphs are paragraphs of that world, seen in training too.
      const trainTitles = new Set(train.flatMap((e) => e.paragraphs.map((p) => p.title)));
      expect(heldOut.flatMap((e) => e.paragraphs.map((p) => p.title)).some((t) => trainTitles.has(t))).toBe(true);
    },
  );

  it('synthetic, shared world: data.synthetic.world sizes the world', () => {
    const world = { countries: 20, cities: 90, people: 600, companies: 150 };
    const { train } = loadTrainData(
      dataCfg({ synthetic: { seed: 4, train: 5, heldOut: 1, minHops: 2, maxHops: 2, world, worlds: 'shared' } }),
    );
    expect(train.map((e) => e.id)).toEqual(
      generateSynth({ seed: 4, n: 6, minHops: 2, maxHops: 2, world })
        .slice(0, 5)
        .map((r) => r.id),
    );
    expect(train.map((e) => e.id)).not.toEqual(
      generateSynth({ seed: 4, n: 6, minHops: 2, maxHops: 2 })
        .slice(0, 5)
        .map((r) => r.id),
    );
  });

  it('benchmark: the last data.benchmarkHeldOut answerable episodes are held out (at most half)', () => {
    const file = 'data/musique/musique_ans_v1.0_sample.jsonl'; // 20 answerable records, shipped in the repo
    const { train, heldOut } = loadTrainData(dataCfg({ source: 'musique', path: file, benchmarkHeldOut: 5 }));
    expect(train).toHaveLength(15);
    expect(heldOut).toHaveLength(5);
    const capped = loadTrainData(dataCfg({ source: 'musique', path: file, benchmarkHeldOut: 50 }));
    expect(capped.heldOut).toHaveLength(10);
    expect(capped.train).toHaveLength(10);
  });

  it('a missing benchmark file is a one-line UserError naming it', () => {
    expect(() => loadTrainData(dataCfg({ source: 'musique', path: 'nope.jsonl' }))).toThrow(
      new UserError('data.path not found: nope.jsonl'),
    );
  });

  it('jsonl (the user format): the shipped sample splits like a benchmark file; a bad line is FILE:LINE: reason', () => {
    const file = 'data/jsonl/questions_sample.jsonl'; // 10 questions
    const all = readUserJsonl(file);
    const { train, heldOut } = loadTrainData(dataCfg({ source: 'jsonl', path: file }));
    expect(train).toEqual(all.slice(0, 5));
    expect(heldOut).toEqual(all.slice(5));
    expect(firstTrainEpisodes(dataCfg({ source: 'jsonl', path: file }), 2, 'audit')).toEqual(all.slice(0, 2));

    const dir = mkdtempSync(join(tmpdir(), 'sharp-train-data-'));
    try {
      const bad = join(dir, 'bad.jsonl');
      writeFileSync(bad, '{"id":"a","question":"Q?","answers":["A"]}\n{"id":"b","question":"Q?"}\n');
      const reason = `${bad}:2: no gold answer: give answers (a list) or answer (+ answer_aliases)`;
      expect(() => loadTrainData(dataCfg({ source: 'jsonl', path: bad }))).toThrow(new UserError(reason));
      expect(() => firstTrainEpisodes(dataCfg({ source: 'jsonl', path: bad }), 1, 'audit')).toThrow(
        new UserError(`audit: ${reason}`),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
