import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AblationMethod } from '../config/sections/ablation.ts';
import type { StageBreakdown } from '../eval/breakdown.ts';
import { accuracyOn } from '../eval/shapes.ts';
import {
  ablationMarkdown,
  plantedPairs,
  readRun,
  shapeCounts,
  shapePairs,
  shapesOf,
  summarise,
  type RunOutcome,
} from './ablation.ts';
import type { AccuracyResult } from '../eval/held-out-accuracy.ts';
import { writeSummary } from '../eval/train-summary.ts';
import { runOutcome as run } from '../../test/ablation-fixtures.ts';

const rate = (num: number, den: number) => ({ num, den, rate: den === 0 ? null : num / den });
const breakdown = {
  accuracy: rate(0, 1),
  subQuestion: rate(0, 1),
  retrieval: rate(0, 1),
  report: rate(0, 1),
  finalGivenReports: rate(0, 1),
  invalidCalls: rate(0, 1),
  offPlan: rate(0, 1),
} as unknown as StageBreakdown;

/** A test measurement of k = 2 samples: per question [id, correct, worker calls, planted reports]. */
function measured(qs: [string, number, number, number][], withClaims = true): AccuracyResult {
  const correct = qs.reduce((a, q) => a + q[1], 0);
  const calls = qs.reduce((a, q) => a + q[2], 0);
  const planted = qs.reduce((a, q) => a + q[3], 0);
  return {
    accuracy: correct / (2 * qs.length),
    correct,
    total: 2 * qs.length,
    samples: 2,
    questions: qs.map(([id, c, n, p]) => (withClaims ? { id, correct: c, calls: n, planted: p } : { id, correct: c })),
    interval: [0, 1],
    answered: 1,
    temperature: 1,
    breakdown,
    ...(withClaims ? { planted: { calls, planted, share: calls === 0 ? null : planted / calls } } : {}),
    tokensPerTrajectory: 10,
    seconds: 1,
  };
}

// Questions: two comparisons, one aggregation, one chain.
const ids = ['3hopcmp__1_2_3', '3hopcmp__4_5_6', '3hopagg__7_8_9', '2hop__10_11'];
const before = measured(ids.map((id) => [id, 1, 4, 1]));
// loo: comparisons and the aggregation right twice, the chain once; 1 planted report of 8 worker calls.
const loo = measured([
  [ids[0] as string, 2, 4, 0],
  [ids[1] as string, 2, 4, 1],
  [ids[2] as string, 2, 4, 0],
  [ids[3] as string, 1, 4, 0],
]);
// broadcast: the new shapes right once each, the chain once; 4 planted reports of 16 calls.
const broadcast = measured([
  [ids[0] as string, 1, 4, 2],
  [ids[1] as string, 1, 4, 1],
  [ids[2] as string, 1, 4, 1],
  [ids[3] as string, 1, 4, 0],
]);
const single = measured(ids.map((id) => [id, 1, 0, 0]));
const runs = [run('broadcast', 0, before, broadcast), run('loo', 0, before, loo), run('single', 0, before, single)];
const methods: AblationMethod[] = ['broadcast', 'loo', 'single'];
const opts = { reps: 2000, seed: 1 };

describe('ablation report for worlds with several question shapes and planted claims', () => {
  it('reads shapes off the test split and measures accuracy per shape (hand-computed)', () => {
    expect(shapesOf(runs)).toEqual(['chain', 'comparison', 'aggregation']);
    expect(shapeCounts(runs)).toEqual({ chain: 1, comparison: 2, aggregation: 1 });
    expect(accuracyOn(loo, ['comparison', 'aggregation'])).toBe(1);
    expect(accuracyOn(loo, ['chain'])).toBe(0.5);
    expect(accuracyOn(broadcast, ['comparison'])).toBe(0.5);
    const s = summarise('loo', [runs[1] as RunOutcome]);
    expect(s.shapes?.comparison).toEqual({ before: 0.5, after: 1 });
    expect(s.planted).toEqual({ before: 0.25, after: 1 / 16 });
  });

  it('pairs arms on the new shapes and on chains separately', () => {
    const subsets = shapePairs(methods, runs, opts);
    expect(subsets.map((s) => s.subset)).toEqual(['comparison + aggregation', 'chain']);
    const onNew = subsets[0]?.pairs.find((p) => p.a === 'broadcast' && p.b === 'loo');
    // Per question broadcast - loo = 0.5 - 1 on each of the three new-shape questions: exactly -0.5.
    expect(onNew?.diff).toMatchObject({ mean: -0.5, low: -0.5, high: -0.5, questions: 3, resolved: true });
    const onChain = subsets[1]?.pairs.find((p) => p.a === 'broadcast' && p.b === 'loo');
    expect(onChain?.diff).toMatchObject({ mean: 0, questions: 1, resolved: false });
  });

  it('pairs multi-agent arms on the planted share as a ratio of sums, leaving out arms without workers', () => {
    const pairs = plantedPairs(methods, runs, opts);
    expect(pairs.map((p) => `${p.a}-${p.b}`)).toEqual(['broadcast-loo']);
    expect(pairs[0]?.diff.mean).toBeCloseTo(4 / 16 - 1 / 16, 12);
    expect(pairs[0]?.diff.questions).toBe(4);
  });

  it('writes the shape and planted sections only for such worlds', () => {
    const summaries = methods.map((m) =>
      summarise(
        m,
        runs.filter((r) => r.method === m),
      ),
    );
    const md = ablationMarkdown(summaries, runs, { command: 'c', machine: 'm', date: 'd' }, [], {
      shapePairs: shapePairs(methods, runs, opts),
      plantedPairs: plantedPairs(methods, runs, opts),
    });
    expect(md).toContain('| method | chain (1 questions) | comparison (2 questions) | aggregation (1 questions) |');
    expect(md).toContain('| SHARP: leave-one-out credit | 0.500 -> 0.500 | 0.500 -> 1.000 | 0.500 -> 1.000 |');
    expect(md).toContain('### Paired differences on comparison + aggregation questions (A - B)');
    expect(md).toContain('| SHARP: leave-one-out credit | 25.0% | 6.3% | -18.8% |');
    expect(md).toContain('| broadcast | loo | +18.8% |');
    const chainOnly = [
      run('broadcast', 0, measured([['2hop__1_2', 1, 2, 0]], false), measured([['2hop__1_2', 2, 2, 0]], false)),
    ];
    const plain = ablationMarkdown([summarise('broadcast', chainOnly)], chainOnly, {
      command: 'c',
      machine: 'm',
      date: 'd',
    });
    expect(plain).not.toContain('question shape');
    expect(plain).not.toContain('planted');
    expect(summarise('broadcast', chainOnly)).not.toHaveProperty('shapes');
    expect(summarise('broadcast', chainOnly)).not.toHaveProperty('planted');
    expect(summarise('broadcast', chainOnly)).not.toHaveProperty('hedged');
    expect(plain).not.toContain('hedge');
  });

  it('the share of hedged worker reports before and after RL, mean over seeds (hand-computed)', () => {
    const hedged = (a: AccuracyResult, calls: number, h: number): AccuracyResult => ({
      ...a,
      hedged: { calls, hedged: h },
    });
    const m = measured([['2hop__1_2', 1, 2, 0]], false);
    const two = [
      run('loo-likelihood', 0, hedged(m, 10, 1), hedged(m, 10, 3)),
      run('loo-likelihood', 1, hedged(m, 20, 2), hedged(m, 0, 0)),
    ];
    const s = summarise('loo-likelihood', two);
    // Before: 1/10 and 2/20 -> 0.1; after: 3/10 and a measurement without reports (left out) -> 0.3.
    expect(s.hedged?.before).toBeCloseTo(0.1, 12);
    expect(s.hedged?.after).toBeCloseTo(0.3, 12);
    const md = ablationMarkdown([s], two, { command: 'c', machine: 'm', date: 'd' });
    expect(md).toContain('| leave-one-out credit, gold-answer likelihood | 10.0% | 30.0% | +20.0% |');
  });
});

describe('a run read back for the report', () => {
  it("RL seconds are the steps' rollout and update seconds from metrics.jsonl, the credit share beside them", () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-ablation-run-'));
    const m = measured([['2hop__1_2', 1, 2, 0]]);
    // A resumed run: its summary holds only the last process's RL stage (3 s, validation evaluations included).
    writeSummary(dir, {
      beforeLabel: 'before RL',
      heldOutBefore: m,
      heldOutAfterRl: m,
      rlSteps: 2,
      stages: { rl: 3, eval_after: 5 },
      info: {},
    });
    const line = (step: number, rollout: number, credit: number, update: number): string =>
      JSON.stringify({
        step,
        'perf/generate_s': rollout - credit,
        'perf/credit_s': credit,
        'perf/rollout_s': rollout,
        'perf/update_s': update,
      });
    writeFileSync(join(dir, 'metrics.jsonl'), `${line(1, 2, 0.5, 4)}\n${line(2, 3, 1, 1)}\n`);
    const r = readRun(dir, 'loo-likelihood', 0);
    expect(r?.rlSeconds).toBeCloseTo(2 + 4 + 3 + 1, 12);
    expect(r?.creditSeconds).toBeCloseTo(1.5, 12);
    expect(r?.wallSeconds).toBe(8);
    const other = { ...(r as RunOutcome), seed: 1, rlSeconds: 10, creditSeconds: 0 };
    expect(summarise('loo-likelihood', [r as RunOutcome, other]).creditShare).toBeCloseTo((1.5 / 10 + 0) / 2, 12);
    // Lines without timings (runs written before them): the summary's RL stage.
    writeFileSync(join(dir, 'metrics.jsonl'), `${JSON.stringify({ step: 1 })}\n`);
    expect(readRun(dir, 'loo-likelihood', 0)?.rlSeconds).toBe(3);
  });
});
