import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Episode } from '../data/episode.ts';
import { openEvalSession, finishEvalSession, limitEpisodes } from './session.ts';
import type { Prediction } from './types.ts';
import { hasPython } from '../../test/reference/has-python.ts';

const repo = resolve(import.meta.dirname, '../..');

/** A fixed answering rule standing in for the agents: first supporting paragraph's title. */
const answer = (ep: Episode): Prediction => {
  const sup = ep.paragraphs.filter((p) => p.isSupporting);
  return {
    id: ep.id,
    answer: ep.answers.length > 0 && ep.id.startsWith('2hop') ? ep.answers[0] : (sup[0]?.title ?? ''),
    supportIdx: sup.map((p) => p.idx),
    answerable: sup.length === (ep.decomposition?.length ?? 0),
  };
};

describe('eval session', () => {
  it('limit never splits a MuSiQue-full pair', () => {
    const ep = (id: string): Episode => ({ id, question: '', answers: [], paragraphs: [] });
    expect(limitEpisodes([ep('a'), ep('a'), ep('b'), ep('b')], 3).map((e) => e.id)).toEqual(['a', 'a', 'b', 'b']);
    expect(limitEpisodes([ep('a'), ep('a'), ep('b'), ep('b')], 2)).toHaveLength(2);
    expect(limitEpisodes([ep('a')], 0)).toHaveLength(1);
  });

  it('interrupted and resumed run writes the same files as one run; metrics are those of the files', () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-session-'));
    const opts = (out: string) => ({
      bench: 'musique',
      data: join(repo, 'data/musique/musique_full_v1.0_sample.jsonl'),
      limit: 5,
      out,
      repoRoot: repo,
    });
    // one go
    const one = openEvalSession(opts(join(base, 'one')));
    expect(one.episodes).toHaveLength(6); // 5 rounded up to whole pairs
    for (const { key, episode } of one.pending()) one.record(key, answer(episode));
    const r1 = finishEvalSession(one, { agents: 'direct' });
    // interrupted after 2 episodes, then resumed
    const two = openEvalSession(opts(join(base, 'two')));
    for (const { key, episode } of two.pending().slice(0, 2)) two.record(key, answer(episode));
    expect(() => finishEvalSession(two)).toThrow('eval: 4 episode(s) have no prediction yet (first: 2hop__9010_9011)');
    const resumed = openEvalSession(opts(join(base, 'two')));
    expect(resumed.pending().map((p) => p.key)).toEqual([
      '2hop__9010_9011',
      '2hop__9010_9011#1',
      '2hop__9040_9041',
      '2hop__9040_9041#1',
    ]);
    for (const { key, episode } of resumed.pending()) resumed.record(key, answer(episode));
    const r2 = finishEvalSession(resumed, { agents: 'direct' });
    expect(readFileSync(r2.files.predictions, 'utf8')).toBe(readFileSync(r1.files.predictions, 'utf8'));
    expect(r2.report.metrics).toEqual(r1.report.metrics);
    // 2-hop items answered with the gold answer and gold support; answerability is judged right
    expect(r1.report.metrics).toEqual({
      answer_f1: 1,
      answer_em: 1,
      support_f1: 1,
      group_answer_sufficiency_f1: 1,
      group_support_sufficiency_f1: 1,
    });
    expect(existsSync(r1.files.metrics) && existsSync(r1.files.report)).toBe(true);
    if (hasPython()) {
      const py = JSON.parse(
        execFileSync('python3', [
          join(repo, 'test/reference/musique_reference.py'),
          r1.files.predictions,
          r1.files.gold ?? '',
        ]).toString(),
      ) as Record<string, number>;
      expect(r1.report.metrics).toEqual(py);
    }
  });

  it('default data is the shipped sample; a missing file is a one-line error', () => {
    const out = mkdtempSync(join(tmpdir(), 'sharp-session-'));
    const s = openEvalSession({ bench: 'gaia', out, repoRoot: repo });
    expect(s.dataFile).toBe(join(repo, 'data/gaia/metadata.jsonl'));
    expect(s.episodes).toHaveLength(6);
    expect(() => openEvalSession({ bench: 'gaia', data: '/nope/metadata.jsonl', out, repoRoot: repo })).toThrow(
      '/nope/metadata.jsonl: benchmark file not found (--data)',
    );
  });
});
