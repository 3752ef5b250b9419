import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/load.ts';
import type { Episode } from '../../data/episode.ts';
import { UserError } from '../../errors.ts';
import {
  checkBf16Base,
  checkDecompositions,
  checkEvalCredit,
  checkExpertData,
  checkTrainDecompositions,
  goldCreditUse,
} from './preflight.ts';

const repo = resolve(import.meta.dirname, '../../..');
const root = mkdtempSync(join(tmpdir(), 'sharp-preflight-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const MUSIQUE = join(repo, 'data/musique/musique_ans_v1.0_sample.jsonl');

/** The MuSiQue sample with the decomposition of its `bare`-th record removed. */
function withoutDecomposition(bare: number): string {
  const lines = readFileSync(MUSIQUE, 'utf8').trim().split('\n');
  const file = join(root, `bare-${bare}.jsonl`);
  writeFileSync(
    file,
    lines
      .map((l, i) => {
        if (i !== bare) return l;
        const r = JSON.parse(l) as Record<string, unknown>;
        delete r.question_decomposition;
        return JSON.stringify(r);
      })
      .join('\n') + '\n',
  );
  return file;
}

describe('goldCreditUse', () => {
  it('names the oracle and repair with a method that replays, nothing else', () => {
    const credit = (...sets: string[]) => loadConfig({ sets }).credit;
    expect(goldCreditUse(credit())).toBeNull();
    expect(goldCreditUse(credit('credit.method=oracle'))).toBe('credit.method oracle');
    expect(goldCreditUse(credit('credit.counterfactual=repair'))).toBe('credit.counterfactual repair');
    expect(goldCreditUse(credit('credit.counterfactual=repair', 'credit.method=shapley'))).toBe(
      'credit.counterfactual repair',
    );
    expect(goldCreditUse(credit('credit.counterfactual=repair', 'credit.method=broadcast'))).toBeNull();
    expect(goldCreditUse(credit('credit.counterfactual=resample'))).toBeNull();
  });
});

describe('checkDecompositions', () => {
  const ep = (id: string, hops: number): Episode =>
    ({
      id,
      question: 'q',
      answers: ['a'],
      paragraphs: [],
      decomposition: Array.from({ length: hops }, () => ({ question: 'h', answer: 'a' })),
    }) as unknown as Episode;

  it('refuses the first episode without one when the credit needs them, in one line', () => {
    const repair = loadConfig({ sets: ['credit.counterfactual=repair'] }).credit;
    expect(() => checkDecompositions([ep('a', 2), ep('b', 0)], repair, 'f.jsonl', 'train')).toThrow(
      new UserError(
        'train: credit.counterfactual repair needs a gold decomposition (question_decomposition) for every episode, ' +
          'and episode b of f.jsonl has none; use data with decompositions (the synthetic world, MuSiQue) or another ' +
          'credit setting',
      ),
    );
    expect(() => checkDecompositions([ep('a', 2)], repair, 'f.jsonl', 'train')).not.toThrow();
    expect(() => checkDecompositions([ep('b', 0)], loadConfig().credit, 'f.jsonl', 'train')).not.toThrow();
  });

  it('refuses data the likelihood value cannot score: no gold answer, or one that tokenises to nothing', () => {
    const lik = loadConfig({ sets: ['credit.value=likelihood'] }).credit;
    const noGold = { ...ep('c', 2), answers: [] };
    expect(() => checkDecompositions([ep('a', 2), noGold], lik, 'f.jsonl', 'train')).toThrow(
      new UserError(
        'train: f.jsonl: credit.value=likelihood: episode c has no gold answer (the likelihood value scores the gold ' +
          'final answer)',
      ),
    );
    expect(() => checkDecompositions([{ ...ep('d', 0), answers: [' '] }], lik, 'f.jsonl', 'eval --credit')).toThrow(
      /^eval --credit: f\.jsonl: credit\.value=likelihood: episode d: its gold answer " " tokenises to nothing$/,
    );
    // Without a decomposition the likelihood value still scores: it needs only the final answer.
    expect(() => checkDecompositions([ep('e', 0)], lik, 'f.jsonl', 'train')).not.toThrow();
    expect(() => checkDecompositions([noGold], loadConfig().credit, 'f.jsonl', 'train')).not.toThrow();
  });

  it('reads a benchmark training split before any run folder (train, ablate)', () => {
    const bare = withoutDecomposition(0);
    const sets = ['data.source=musique', `data.path=${bare}`, 'data.benchmarkHeldOut=1'];
    expect(() => checkTrainDecompositions(loadConfig({ sets: [...sets, 'credit.method=oracle'] }), 'train')).toThrow(
      /^train: credit\.method oracle needs a gold decomposition .* and episode \S+ of data\.path .*bare-0\.jsonl has none/,
    );
    // Without a credit setting that needs them, or on the synthetic world, nothing is read.
    expect(() => checkTrainDecompositions(loadConfig({ sets }), 'train')).not.toThrow();
    expect(() =>
      checkTrainDecompositions(loadConfig({ sets: ['credit.method=oracle', 'data.path=/nonexistent'] }), 'train'),
    ).not.toThrow();
    expect(() =>
      checkTrainDecompositions(
        loadConfig({ sets: [...sets.slice(0, 1), 'data.path=/nonexistent', 'credit.method=oracle'] }),
        'train',
      ),
    ).toThrow(/^train: data\.path not found: \/nonexistent$/);
  });

  it('eval --credit: the benchmark file against the credit config, before the output folder', () => {
    const repair = loadConfig({ sets: ['credit.counterfactual=repair'] });
    const o = { data: undefined, limit: 0, repoRoot: repo };
    expect(() => checkEvalCredit(repair, { ...o, bench: 'hotpotqa' })).toThrow(
      /^eval --credit: credit\.counterfactual repair needs a gold decomposition .*hotpot_dev_distractor_sample\.json has none/,
    );
    expect(() => checkEvalCredit(repair, { ...o, bench: 'musique' })).not.toThrow();
    expect(() => checkEvalCredit(loadConfig(), { ...o, bench: 'hotpotqa' })).not.toThrow();
    // A file the session cannot read is the session's to report.
    expect(() => checkEvalCredit(repair, { ...o, bench: 'musique', data: '/nonexistent' })).not.toThrow();
  });

  it('refuses the scripted expert on data without decompositions, before the output folder', () => {
    const o = { bench: 'musique', data: withoutDecomposition(1), limit: 0, repoRoot: repo };
    expect(() => checkExpertData(o)).toThrow(
      /^eval --policy expert: episode \S+ of musique has no gold decomposition \(the scripted expert follows one; use --policy lm\)$/,
    );
    expect(() => checkExpertData({ ...o, limit: 1 })).not.toThrow();
    expect(() => checkExpertData({ ...o, data: MUSIQUE })).not.toThrow();
  });
});

describe('checkBf16Base', () => {
  it('refuses a bfloat16 base on a backend without the bfloat16 kernels, and ignores a float32 one', async () => {
    const bf16 = loadConfig({ sets: ['train.lora.rank=4', 'train.lora.baseDtype=bfloat16'] });
    await expect(checkBf16Base(loadConfig(), 'cpu', 'train')).resolves.toBeUndefined();
    await expect(checkBf16Base(bf16, 'cpu', 'train')).rejects.toThrow(
      new UserError(
        "train: train.lora.baseDtype bfloat16 needs the native kernels' bfloat16 products, and the cpu backend " +
          '(native kernels: off) has none; use run.backend native (or wasm with the native kernels built) or ' +
          'train.lora.baseDtype float32',
      ),
    );
  });
});
