import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { accuracyLine, readSummary, writeSummary, type TrainSummary } from './summary.ts';

const acc = (correct: number, total: number) => ({ accuracy: correct / total, correct, total, answered: 1, seconds: 1 });

describe('summary', () => {
  it('prints both accuracies side by side', () => {
    const s: TrainSummary = { beforeLabel: 'SFT only', heldOutBefore: acc(21, 100), heldOutAfterRl: acc(34, 100), stages: {}, info: {} };
    expect(accuracyLine(s)).toBe('held-out accuracy: SFT only 0.21 -> after RL 0.34 (n = 100)');
    expect(accuracyLine({ beforeLabel: 'before RL', heldOutBefore: acc(1, 8), stages: {}, info: {} })).toBe('held-out accuracy: before RL 0.13 -> after RL n/a (n = 8)');
  });

  it('round-trips through summary.json, written atomically (no temp file left)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-summary-'));
    expect(readSummary(dir)).toBeUndefined();
    const s: TrainSummary = { beforeLabel: 'SFT only', heldOutBefore: acc(1, 4), rlSteps: 3, stages: { sft: 1.5 }, info: { vocab: 400 } };
    writeSummary(dir, s);
    expect(readSummary(dir)).toEqual(s);
    expect(readdirSync(dir)).toEqual(['summary.json']);
  });
});
