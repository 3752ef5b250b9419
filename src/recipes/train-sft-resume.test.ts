import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { listCheckpoints, SFT_CHECKPOINTS_DIR } from '../train/checkpoints/checkpoint.ts';
import { readMetrics } from '../train/metrics/jsonl.ts';
import { expectLoadable, HARNESS, microConfig, NODE_ARGS, sharp as sharpIn } from '../../test/cli-helpers.ts';
import { readSummary } from '../eval/train-summary.ts';
import { SFT_MODEL_DIR } from './stages/train-pipeline.ts';

/** `sharp train` killed with SIGKILL during its SFT stage, then `--resume`: SFT continues from its own checkpoints. */
let root: string;
const sharp = (args: string[]) => sharpIn(root, args);
const SFT_STEPS = 24;

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sharp-train-sft-kill-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('sharp train: SIGKILL during SFT and --resume', () => {
  it(
    'continues the SFT from its latest SFT checkpoint, each SFT step logged once, and the RL checkpoints stay ' +
      'apart',
    async () => {
      const cfg = microConfig(root, 'sftkill', 2, SFT_STEPS);
      const runs = join(root, 'runs');
      const child = spawn(process.execPath, [...NODE_ARGS, HARNESS, 'train', '--config', cfg], {
        cwd: root,
        stdio: 'ignore',
      });
      const exited = new Promise<void>((res) => child.on('exit', () => res()));
      // Poll for the first complete SFT checkpoint (train.checkpointEvery 1: one per SFT step), then kill -9.
      let run = '';
      // Polls while the child runs: its own progress, not this machine's clock, bounds the wait.
      let running = true;
      void exited.then(() => (running = false));
      while (running) {
        const mine = existsSync(runs) ? readdirSync(runs).filter((d) => d.startsWith('sftkill-')) : [];
        if (mine[0]) {
          run = join(runs, mine[0]);
          if ((await listCheckpoints(run, SFT_CHECKPOINTS_DIR)).length > 0) break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      child.kill('SIGKILL');
      await exited;
      expect(run).not.toBe('');
      expect(existsSync(join(run, SFT_MODEL_DIR))).toBe(false); // killed during SFT
      const sftAt = (await listCheckpoints(run, SFT_CHECKPOINTS_DIR)).map((c) => c.step);
      const last = sftAt[sftAt.length - 1] as number;
      expect(last).toBeGreaterThan(0);
      expect(last).toBeLessThan(SFT_STEPS);
      expect(await listCheckpoints(run)).toEqual([]); // no RL checkpoint yet: an SFT one is never taken for one

      const r = await sharp(['train', '--resume', run]);
      expect(r.stderr).not.toMatch(/internal error/);
      expect(r.code).toBe(0);
      const log = readFileSync(join(run, 'log.jsonl'), 'utf8');
      const resumed = log
        .split('\n')
        .filter((l) => l.includes('"msg":"resuming SFT from its latest checkpoint"'))
        .map((l) => JSON.parse(l) as { step: number });
      expect(resumed.map((l) => l.step)).toEqual([last]);
      expect(log.match(/"msg":"sft done"/g)).toHaveLength(1);
      // Each SFT step exactly once: the lines the killed process wrote past its checkpoint are dropped.
      expect(readMetrics(join(run, 'sft-metrics.jsonl')).map((m) => m.step)).toEqual(
        Array.from({ length: SFT_STEPS }, (_, i) => i + 1),
      );
      expect(existsSync(join(run, SFT_MODEL_DIR, 'config.json'))).toBe(true);
      // The RL loop started from step 0 in its own folder; the SFT checkpoints are the newest 20 of steps 1..23.
      expect(await expectLoadable(run)).toEqual([1, 2]);
      expect((await listCheckpoints(run, SFT_CHECKPOINTS_DIR)).map((c) => c.step)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 4),
      );
      expect(readMetrics(join(run, 'metrics.jsonl')).map((m) => m.step)).toEqual([1, 2]);
      const summary = readSummary(run);
      expect(summary?.rlSteps).toBe(2);
      expect(summary?.resumedFrom).toBeUndefined(); // RL itself was not resumed
      expect(Number.isFinite(summary?.info.sftFirstLoss)).toBe(true); // the first SFT loss, kept in the checkpoint
    },
    180_000,
  );
});
