import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { readMetrics } from '../train/metrics/jsonl.ts';
import { expectLoadable, microConfig, onlyRun, sharp as sharpIn } from '../../test/cli-helpers.ts';
import { readSummary } from '../eval/train-summary.ts';

/** Smoke test of the real `sharp train` program (a short end-to-end run of the real CLI). */
let root: string;
const sharp = (args: string[]) => sharpIn(root, args);

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sharp-train-cli-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('sharp train (CLI smoke)', () => {
  it('runs data -> init -> SFT -> eval -> GRPO -> eval and leaves a complete run folder', async () => {
    const cfg = microConfig(root, 'smoke', 2);
    const r = await sharp(['train', '--config', cfg]);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(0);
    // 3 held out: 1 validation question, 2 test questions, one greedy sample each
    expect(r.stdout).toMatch(
      /^test accuracy: SFT only \d\.\d\d \[\d\.\d\d, \d\.\d\d\] -> after RL \d\.\d\d \[\d\.\d\d, \d\.\d\d\] \(n = 2, greedy\)$/m,
    );
    const run = onlyRun(join(root, 'runs'));
    for (const f of [
      'config.yaml',
      'log.jsonl',
      'metrics.jsonl',
      'sft-metrics.jsonl',
      'summary.json',
      'sft-model/config.json',
      'sft-model/tokenizer.json',
    ]) {
      expect(existsSync(join(run, f)), f).toBe(true);
    }
    expect(await expectLoadable(run)).toEqual([1, 2]);
    const metrics = readMetrics(join(run, 'metrics.jsonl'));
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    // 2 questions x groupSize 2 per step.
    expect(metrics[0]?.['rollout/trajectories']).toBe(4);
    expect(readMetrics(join(run, 'sft-metrics.jsonl')).map((m) => m.step)).toEqual([1, 2]);
    const summary = readSummary(run);
    expect(summary?.rlSteps).toBe(2);
    expect(summary?.heldOutBefore?.total).toBe(2);
    expect(summary?.heldOutAfterRl?.total).toBe(2);
    // The printed numbers are the ones in summary.json.
    const b = summary?.heldOutBefore;
    const a = summary?.heldOutAfterRl;
    expect(r.stdout).toContain(
      `SFT only ${b?.accuracy.toFixed(2)} [${b?.interval[0].toFixed(2)}, ${b?.interval[1].toFixed(2)}] -> after ` +
        `RL ${a?.accuracy.toFixed(2)} [`,
    );
    const log = readFileSync(join(run, 'log.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string });
    expect(log.map((l) => l.msg)).toEqual(
      expect.arrayContaining([
        'new run',
        'expert transcripts written',
        'created a random-init model with a fitted tokenizer',
        'sft done',
      ]),
    );
  }, 120_000);

  it('bad input is one line on stderr and exit 2', async () => {
    const r = await sharp(['train', '--config', join(root, 'missing.yaml')]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([`sharp: config: file not found: ${join(root, 'missing.yaml')}`]);
    const bad = await sharp(['train', '--set', 'train.steps=-1']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/train\.steps/);
  }, 60_000);
});
