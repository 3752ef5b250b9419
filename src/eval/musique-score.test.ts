import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Episode } from '../data/episode.ts';
import { readMusique } from '../data/readers/musique.ts';
import { musique } from './bench/musique.ts';
import { scoreMusique } from './musique-score.ts';
import { writeOfficialPredictions } from './predictions.ts';
import type { Prediction } from './types.ts';
import { hasPython } from '../../test/reference/has-python.ts';

const repo = resolve(import.meta.dirname, '../..');
const reference = join(repo, 'test/reference/musique_reference.py');
const files = {
  ans: join(repo, 'data/musique/musique_ans_v1.0_sample.jsonl'),
  full: join(repo, 'data/musique/musique_full_v1.0_sample.jsonl'),
  shared: join(repo, '../shared/data/musique/musique_ans_train_100.jsonl'),
};

/**
 * Deterministic predictions of every kind the metric treats differently: exact, alias, partial,
 * wrong and empty answers; gold, partial, extra and empty support; right and wrong answerability.
 */
function mixedPredictions(eps: readonly Episode[]): Prediction[] {
  return eps.map((ep, i) => {
    const gold = ep.paragraphs.filter((p) => p.isSupporting).map((p) => p.idx);
    const other = ep.paragraphs.filter((p) => !p.isSupporting).map((p) => p.idx);
    const answers = ep.answers.length > 0 ? ep.answers : ['none'];
    const answer = [
      answers[0],
      answers.at(-1) ?? '',
      `the ${answers[0]} region`,
      'Zanzibar',
      '',
      answers[0].split(' ')[0],
    ][i % 6];
    const supportIdx = [gold, gold.slice(1), [...gold, ...other.slice(0, 2)], [], other.slice(0, 1)][i % 5];
    const answerable = i % 7 === 3 ? !(ep.answerable ?? true) : (ep.answerable ?? true);
    return { id: ep.id, answer, supportIdx, answerable };
  });
}

describe('scoreMusique against the official metric logic', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sharp-musique-score-'));
  for (const [name, gold] of Object.entries(files)) {
    it.skipIf(!existsSync(gold))(`${name}: file scores equal the in-memory aggregate and the Python reference`, () => {
      const eps = readMusique(gold);
      const preds = mixedPredictions(eps);
      const out = join(dir, name);
      const written = writeOfficialPredictions(musique, out, eps, preds, gold);
      const fromFiles = scoreMusique(written.gold ?? gold, written.predictions);
      expect(fromFiles).toEqual(musique.aggregate(preds, eps));
      // The shape of the official output: three keys for ans, five for full.
      expect(Object.keys(fromFiles)).toEqual(
        name === 'full'
          ? ['answer_f1', 'answer_em', 'support_f1', 'group_answer_sufficiency_f1', 'group_support_sufficiency_f1']
          : ['answer_f1', 'answer_em', 'support_f1'],
      );
      expect(fromFiles.answer_f1).toBeGreaterThan(0);
      expect(fromFiles.answer_f1).toBeLessThan(1);
      if (hasPython()) {
        const py = JSON.parse(
          execFileSync('python3', [reference, written.predictions, written.gold ?? gold]).toString(),
        ) as Record<string, number>;
        expect(fromFiles).toEqual(py);
      }
    });
  }
  it('perfect predictions score 1 everywhere (full sample)', () => {
    const eps = readMusique(files.full);
    const preds = eps.map((ep) => ({
      id: ep.id,
      answer: ep.answers[0] ?? '',
      supportIdx: ep.paragraphs.filter((p) => p.isSupporting).map((p) => p.idx),
      answerable: ep.answerable ?? true,
    }));
    expect(musique.aggregate(preds, eps)).toEqual({
      answer_f1: 1,
      answer_em: 1,
      support_f1: 1,
      group_answer_sufficiency_f1: 1,
      group_support_sufficiency_f1: 1,
    });
  });
  it('--limit subsets: the gold subset has exactly the predicted ids, in order', () => {
    const eps = readMusique(files.ans).slice(0, 5);
    const preds = mixedPredictions(eps);
    const w = writeOfficialPredictions(musique, join(dir, 'limit'), eps, preds, files.ans);
    expect(scoreMusique(w.gold ?? '', w.predictions)).toEqual(musique.aggregate(preds, eps));
    expect(() => scoreMusique(files.ans, w.predictions)).toThrow(/number of lines/);
  });
  it('a predictions file with a bad field is a one-line error', () => {
    const p = join(dir, 'bad-preds.jsonl');
    writeFileSync(
      p,
      '{"id":"2hop__9000_9001","predicted_answer":"x","predicted_support_idxs":"0","predicted_answerable":true}\n',
    );
    expect(() => scoreMusique(files.ans, p)).toThrow(
      `${p}:1: predicted_support_idxs: Invalid input: expected array, received string`,
    );
  });
});
