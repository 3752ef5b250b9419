import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Episode } from '../data/episode.ts';
import { BENCHMARKS, benchmarkNames, getBenchmark, listBenchmarks } from './benchmarks.ts';
import { writeOfficialPredictions } from './predictions.ts';
import type { Prediction } from './types.ts';

const repo = resolve(import.meta.dirname, '../..');

const goldPreds = (eps: readonly Episode[]): Prediction[] =>
  eps.map((ep) => ({
    id: ep.id,
    answer: ep.answers[0] ?? '',
    supportIdx: ep.paragraphs.filter((p) => p.isSupporting).map((p) => p.idx),
    answerable: ep.answerable ?? true,
  }));
const wrongPreds = (eps: readonly Episode[]): Prediction[] =>
  eps.map((ep) => ({ id: ep.id, answer: 'Zanzibar', supportIdx: [], answerable: true }));

describe('benchmark registry', () => {
  it('lists every benchmark with a shipped sample that reads', () => {
    expect(benchmarkNames()).toEqual([
      'musique',
      'hotpotqa',
      '2wiki',
      'frames',
      'webwalkerqa',
      'gaia',
      'docmath',
      'jsonl',
    ]);
    for (const name of benchmarkNames()) {
      const b = getBenchmark(name);
      expect(existsSync(join(repo, b.sample)), b.sample).toBe(true);
      expect(b.read(join(repo, b.sample)).length).toBeGreaterThan(0);
      expect(listBenchmarks()).toContain(`sample: ${b.sample}`);
    }
    expect(() => getBenchmark('squad')).toThrow(
      "unknown benchmark 'squad' (known: musique, hotpotqa, 2wiki, frames, webwalkerqa, gaia, docmath, jsonl)",
    );
  });

  // Gold answers must score full marks under each official metric; a wrong answer must score 0.
  const expectedGold: Record<string, Record<string, number>> = {
    musique: { answer_f1: 1, answer_em: 1, support_f1: 1 },
    hotpotqa: { em: 1, f1: 1 },
    '2wiki': { em: 100, f1: 100, evi_f1: 0, joint_em: 0 }, // no evidence triples predicted
    frames: { cover_em: 1, em: 1, f1: 1 },
    webwalkerqa: { cover_em: 1, em: 1, f1: 1 },
    gaia: { accuracy: 1 },
    docmath: { accuracy: 1 },
    jsonl: { em: 1, f1: 1, cover_em: 1, support_f1: 1 },
  };
  for (const name of Object.keys(expectedGold)) {
    it(`${name}: gold answers score full marks, wrong ones 0`, () => {
      const b = BENCHMARKS[name];
      const eps = b.read(join(repo, b.sample));
      const gold = b.aggregate(goldPreds(eps), eps);
      expect(gold).toMatchObject(expectedGold[name]);
      const wrong = b.aggregate(wrongPreds(eps), eps);
      expect(wrong[b.headline]).toBe(0);
    });
  }

  it('hotpotqa: a cited paragraph stands for all its sentences (hand-computed sp)', () => {
    const b = BENCHMARKS.hotpotqa;
    const eps = b.read(join(repo, b.sample));
    // episode 0: cites paragraphs 1 and 3 (3 sentences each); gold has 2 of those 6 -> P 1/3, R 1, F1 0.5
    expect(b.score(goldPreds(eps)[0], eps[0])).toEqual({ em: 1, f1: 1, sp_em: 0, sp_f1: 0.5 });
    // yes/no rule: "no" against "no" is 1, "no way" against "no" is 0
    expect(b.score({ ...goldPreds(eps)[1], answer: 'no way' }, eps[1]).f1).toBe(0);
  });

  it('writes official submission files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-bench-'));
    for (const name of benchmarkNames()) {
      const b = BENCHMARKS[name];
      const src = join(repo, b.sample);
      const eps = b.read(src);
      const w = writeOfficialPredictions(b, join(dir, name), eps, goldPreds(eps), src);
      const text = readFileSync(w.predictions, 'utf8');
      if (name === 'musique') {
        const first = JSON.parse(text.split('\n')[0]) as Record<string, unknown>;
        expect(Object.keys(first)).toEqual([
          'id',
          'predicted_answer',
          'predicted_support_idxs',
          'predicted_answerable',
        ]);
        expect(readFileSync(w.gold ?? '', 'utf8')).toBe(readFileSync(src, 'utf8')); // all 20 lines, verbatim
      } else if (name === 'hotpotqa' || name === '2wiki') {
        const sub = JSON.parse(text) as {
          answer: Record<string, string>;
          sp: Record<string, unknown[]>;
          evidence?: Record<string, unknown[]>;
        };
        expect(Object.keys(sub.answer)).toHaveLength(eps.length);
        expect(sub.evidence !== undefined).toBe(name === '2wiki');
        expect((JSON.parse(readFileSync(w.gold ?? '', 'utf8')) as unknown[]).length).toBe(eps.length);
      } else if (name === 'gaia') {
        expect(Object.keys(JSON.parse(text.split('\n')[0]) as object)).toEqual([
          'task_id',
          'model_answer',
          'reasoning_trace',
        ]);
      } else if (name === 'docmath') {
        expect((JSON.parse(text) as Array<{ question_id: string }>).map((r) => r.question_id)).toEqual(
          eps.map((e) => e.id),
        );
      } else {
        expect(text.trim().split('\n')).toHaveLength(eps.length);
      }
    }
  });
  it('misaligned predictions are refused', () => {
    const b = BENCHMARKS.musique;
    const eps = b.read(join(repo, b.sample));
    expect(() => b.aggregate(goldPreds(eps).slice(1), eps)).toThrow(/differ in number/);
    expect(() => b.formatPredictions(goldPreds(eps).reverse(), eps)).toThrow(/prediction 0 has id/);
  });
});

describe('jsonl (the user format)', () => {
  const b = BENCHMARKS.jsonl;
  const eps = b.read(join(repo, b.sample));

  it('scores answers against every alias and the cited paragraphs against the marked ones (hand-computed)', () => {
    // Episode 3: answers Daikux Zhusto / Zhusto; paragraphs 10 and 16 support.
    expect(eps[3].answers).toEqual(['Daikux Zhusto', 'Zhusto']);
    const pred = { id: eps[3].id, answer: 'zhusto', supportIdx: [10, 4], answerable: true };
    // support: 1 of 2 cited is gold, 1 of 2 gold cited -> P = R = 1/2, F1 1/2.
    expect(b.score(pred, eps[3])).toEqual({ em: 1, f1: 1, cover_em: 1, support_f1: 0.5 });
    // "founded by Zhusto" covers an alias but is not one: EM 0; F1 against "Zhusto" P 1/3, R 1 -> 1/2.
    expect(b.score({ ...pred, answer: 'founded by Zhusto', supportIdx: [] }, eps[3])).toEqual({
      em: 0,
      f1: 0.5,
      cover_em: 1,
      support_f1: 0,
    });
  });

  it('an episode without marked paragraphs has no support score; hops come from the decomposition', () => {
    const bare = { ...eps[3], paragraphs: eps[3].paragraphs.map(({ isSupporting: _, ...p }) => p) };
    expect(Object.keys(b.score({ id: bare.id, answer: '', supportIdx: [], answerable: true }, bare))).toEqual([
      'em',
      'f1',
      'cover_em',
    ]);
    expect(b.groups(eps[0])).toEqual({ hops: ['3hop'] });
    expect(b.groups(eps[2])).toEqual({ hops: ['2hop'] });
    expect(b.groups({ ...eps[0], decomposition: undefined })).toEqual({});
  });
});
