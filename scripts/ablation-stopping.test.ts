import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AblationMethod } from '../src/config/sections/ablation.ts';
import type { StageBreakdown } from '../src/eval/breakdown.ts';
import type { AccuracyResult } from '../src/eval/held-out-accuracy.ts';
import { writeSummary } from '../src/eval/train-summary.ts';
import type { RunOutcome } from '../src/report/ablation.ts';
import { runOutcome } from '../test/ablation-fixtures.ts';
import { decide, finishedRuns, stoppingLines } from './ablation-stopping.ts';

const rule = { target: 0.03, cap: 24, step: 4 };
const rate = (num: number, den: number) => ({ num, den, rate: num / den });
const breakdown = { subQuestion: rate(0, 1), invalidCalls: rate(0, 1) } as unknown as StageBreakdown;

/** A test measurement of one sample per question: `correct[q]` 0 or 1. */
function measured(correct: number[]): AccuracyResult {
  const right = correct.reduce((a, b) => a + b, 0);
  return {
    accuracy: right / correct.length,
    correct: right,
    total: correct.length,
    samples: 1,
    questions: correct.map((c, q) => ({ id: `q${q}`, correct: c })),
    interval: [0, 1],
    answered: 1,
    temperature: 1,
    breakdown,
    tokensPerTrajectory: 1,
    seconds: 1,
  };
}

const run = (method: AblationMethod, seed: number, correct: number[]): RunOutcome =>
  runOutcome(method, seed, measured(correct.map(() => 0)), measured(correct));

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('ablation stopping rule', () => {
  it('stops at or under the target, extends by the next seeds up to the cap, and is undecidable at the cap', () => {
    const twelve = Array.from({ length: 12 }, (_, i) => i);
    expect(decide(0.03, twelve, twelve, rule)).toEqual({ action: 'stop' });
    expect(decide(0.0301, twelve, twelve, rule)).toEqual({ action: 'extend', seeds: [12, 13, 14, 15] });
    // The design not finished: no decision, whatever the MDE.
    expect(decide(0.0301, twelve.slice(0, 10), twelve, rule)).toEqual({ action: 'wait', seeds: [10, 11] });
    expect(decide(0.01, twelve.slice(0, 10), twelve, rule)).toEqual({ action: 'wait', seeds: [10, 11] });
    const twentyTwo = Array.from({ length: 22 }, (_, i) => i);
    expect(decide(0.05, twentyTwo, twelve, rule)).toEqual({ action: 'extend', seeds: [22, 23] });
    expect(decide(0.05, [...twentyTwo, 22, 23], twelve, rule)).toEqual({ action: 'not decidable' });
  });

  it("reads each arm's MDE against the reference over the seeds both finished, and no difference", () => {
    // 20 questions; the oracle equals broadcast in every cell (se 0: stop); loo-likelihood differs on
    // alternate questions, the sign flipping with the seed, so its MDE is well above 0.03.
    const base = (s: number) => Array.from({ length: 20 }, (_, q) => (q + s) % 2);
    const runs: RunOutcome[] = [];
    for (const s of [0, 1, 2, 3]) {
      runs.push(run('broadcast', s, base(s)), run('oracle', s, base(s)));
      runs.push(run('loo-likelihood', s, base(s + (s % 2))));
    }
    runs.push(run('loo-likelihood', 9, base(0))); // no broadcast beside it: not paired
    const lines = stoppingLines(
      runs,
      ['broadcast', 'loo-likelihood', 'oracle', 'loo-repair-workers'],
      'broadcast',
      [0, 1, 2, 3],
      rule,
      { reps: 200, seed: 0 },
    );
    expect(lines[0]).toMatch(/^loo-likelihood: MDE 0\.\d{4} against broadcast over 4 seeds; extend: seeds 4, 5, 6, 7/);
    expect(Number(/MDE (\S+)/.exec(lines[0] ?? '')?.[1])).toBeGreaterThan(0.03);
    expect(lines[1]).toBe('oracle: MDE 0.0000 against broadcast over 4 seeds; stop: at most 0.03');
    expect(lines[2]).toBe('loo-repair-workers: no seed finished beside broadcast');
    expect(lines.join('\n')).not.toMatch(/[+-]0\.\d|\[/);
  });

  it('finds finished runs by folder name across folders, once each, and skips unfinished ones', () => {
    const root = mkdtempSync(join(tmpdir(), 'stopping-'));
    dirs.push(root);
    const write = (folder: string, name: string, finished: boolean): void => {
      const dir = join(root, folder, name);
      mkdirSync(dir, { recursive: true });
      const m = measured([1, 0]);
      writeSummary(dir, {
        beforeLabel: 'before RL',
        heldOutBefore: m,
        ...(finished ? { heldOutAfterRl: m } : {}),
        rlSteps: 1,
        stages: { rl: 1 },
        info: {},
      });
    };
    write('a', 'broadcast-s0', true);
    write('a', 'oracle-s2', false);
    write('b', 'broadcast-s1', true);
    write('b', 'broadcast-s0', true);
    write('b', 'single-s1', true);
    const runs = finishedRuns([join(root, 'a'), join(root, 'b')], ['broadcast', 'oracle']);
    expect(runs.map((r) => `${r.method}-s${r.seed}`)).toEqual(['broadcast-s0', 'broadcast-s1']);
    expect(() => finishedRuns([join(root, 'c')], ['broadcast'])).toThrow(/no such folder/);
  });
});
