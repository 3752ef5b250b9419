import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stageBreakdown, wilsonInterval } from './breakdown.ts';
import type { AccuracyResult } from './held-out-accuracy.ts';
import { accuracyLine, readSummary, writeSummary, type TrainSummary } from './train-summary.ts';

const acc = (correct: number, total: number, extra: Partial<AccuracyResult> = {}): AccuracyResult => ({
  accuracy: correct / total,
  correct,
  total,
  interval: wilsonInterval(correct, total),
  answered: 1,
  temperature: 0,
  breakdown: stageBreakdown([], new Map(), () => 0),
  tokensPerTrajectory: 10,
  seconds: 1,
  ...extra,
});
const withInvalid = (num: number, den: number): AccuracyResult['breakdown'] => ({
  ...stageBreakdown([], new Map(), () => 0),
  invalidCalls: { num, den, rate: num / den },
});

describe('summary', () => {
  it('prints both accuracies side by side', () => {
    const s: TrainSummary = {
      beforeLabel: 'SFT only',
      heldOutBefore: acc(21, 100),
      heldOutAfterRl: acc(34, 100),
      stages: {},
      info: {},
    };
    // Wilson 95%: 21/100 -> [0.1417, 0.2998]; 34/100 -> [0.2546, 0.4372].
    expect(accuracyLine(s)).toBe(
      'test accuracy: SFT only 0.21 [0.14, 0.30] -> after RL 0.34 [0.25, 0.44] (n = 100, greedy)\ninvalid tool ' +
        'calls: 0.0% -> 0.0%',
    );
    expect(accuracyLine({ beforeLabel: 'before RL', heldOutBefore: acc(1, 8), stages: {}, info: {} })).toBe(
      'test accuracy: before RL 0.13 [0.02, 0.47] -> after RL n/a (n = 8, greedy)\ninvalid tool calls: 0.0% -> n/a',
    );
    // 120/300 -> [0.3458, 0.4567]; 165/300 -> [0.4935, 0.6053].
    const before = acc(120, 300, {
      temperature: 1,
      workerCalls: { n: 700, helpful: 0.5, neutral: 0.439, harmful: 0.061 },
      breakdown: withInvalid(4, 1000),
    });
    const after = acc(165, 300, {
      temperature: 1,
      workerCalls: { n: 650, helpful: 0.6, neutral: 0.368, harmful: 0.032 },
      breakdown: withInvalid(1, 500),
    });
    expect(
      accuracyLine({ beforeLabel: 'SFT only', heldOutBefore: before, heldOutAfterRl: after, stages: {}, info: {} }),
    ).toBe(
      'test accuracy: SFT only 0.40 [0.35, 0.46] -> after RL 0.55 [0.49, 0.61] (n = 300, temperature 1)\nharmful ' +
        'worker calls: 6.1% -> 3.2% (LOO replays); invalid tool calls: 0.4% -> 0.2%',
    );
    // k = 4 samples per question: n is reported as questions x samples
    expect(
      accuracyLine({
        beforeLabel: 'before RL',
        heldOutBefore: acc(60, 600, { samples: 4, temperature: 1 }),
        stages: {},
        info: {},
      }).split('\n')[0],
    ).toBe('test accuracy: before RL 0.10 [0.08, 0.13] -> after RL n/a (n = 150 questions x 4 samples, temperature 1)');
  });

  it('round-trips through summary.json, written atomically (no temp file left)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-summary-'));
    expect(readSummary(dir)).toBeUndefined();
    const s: TrainSummary = {
      beforeLabel: 'SFT only',
      heldOutBefore: acc(1, 4),
      rlSteps: 3,
      stages: { sft: 1.5 },
      info: { vocab: 400 },
    };
    writeSummary(dir, s);
    expect(readSummary(dir)).toEqual(s);
    expect(readdirSync(dir)).toEqual(['summary.json']);
  });
});
