import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { listCheckpoints } from '../train/checkpoints/checkpoint.ts';
import { readMetrics } from '../train/metrics/jsonl.ts';
import { expectLoadable, HARNESS, microConfig, NODE_ARGS, sharp as sharpIn } from '../../test/cli-helpers.ts';
import { readSummary } from '../eval/train-summary.ts';

/** `sharp train` killed with SIGKILL mid-run, then `--resume`. */
let root: string;
const sharp = (args: string[]) => sharpIn(root, args);

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sharp-train-kill-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('sharp train: SIGKILL and --resume', () => {
  it(
    'a run killed with SIGKILL after its first checkpoint resumes from its latest checkpoint, with every checkpoint ' +
      'intact',
    async () => {
      const cfg = microConfig(root, 'kill', 6);
      const runs = join(root, 'runs');
      const before = new Set(existsSync(runs) ? readdirSync(runs) : []);
      const child = spawn(process.execPath, [...NODE_ARGS, HARNESS, 'train', '--config', cfg], {
        cwd: root,
        stdio: 'ignore',
      });
      const exited = new Promise<void>((res) => child.on('exit', () => res()));
      // Poll for the first complete checkpoint, then kill -9 mid-run.
      let run = '';
      // Polls while the child runs: its own progress, not this machine's clock, bounds the wait.
      let running = true;
      void exited.then(() => (running = false));
      while (running) {
        const mine = existsSync(runs) ? readdirSync(runs).filter((d) => d.startsWith('kill-') && !before.has(d)) : [];
        if (mine[0]) {
          run = join(runs, mine[0]);
          if ((await listCheckpoints(run)).length > 0) break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      child.kill('SIGKILL');
      await exited;
      expect(run).not.toBe('');
      const killedAt = await expectLoadable(run);
      expect(killedAt.length).toBeGreaterThan(0);
      const last = killedAt[killedAt.length - 1] as number;
      expect(last).toBeLessThan(6); // killed mid-run, not after it finished

      const r = await sharp(['train', '--resume', run]);
      expect(r.stderr).not.toMatch(/internal error/);
      expect(r.code).toBe(0);
      const summary = readSummary(run);
      expect(summary?.resumedFrom).toBe(last); // continued from the checkpoint, losing only later steps
      expect(summary?.rlSteps).toBe(6);
      expect(await expectLoadable(run)).toEqual([1, 2, 3, 4, 5, 6]); // keepCheckpoints 20: none pruned
      // Each step's metrics exactly once: lines past the checkpoint written before the kill are dropped.
      expect(readMetrics(join(run, 'metrics.jsonl')).map((m) => m.step)).toEqual([1, 2, 3, 4, 5, 6]);
      const log = readFileSync(join(run, 'log.jsonl'), 'utf8');
      expect(log).toContain('"msg":"resuming run"');
      // The resumed process reuses the run's SFT model and before-RL accuracy instead of redoing them.
      expect(log.match(/"msg":"sft done"/g)).toHaveLength(1);
      expect(log.match(/"msg":"held-out accuracy \(SFT only\)"/g)).toHaveLength(1);
      expect(log.match(/"msg":"held-out accuracy \(SFT only\) read from summary.json"/g)).toHaveLength(1);
      // 3 held out: 1 validation question, 2 test questions, one greedy sample each
      expect(summary?.heldOutAfterRl?.total).toBe(2);
    },
    180_000,
  );
});
