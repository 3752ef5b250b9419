import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { listCheckpoints, readTrainerState } from '../train/checkpoints/checkpoint.ts';
import { readMetrics } from '../train/metrics/jsonl.ts';
import { expectLoadable, HARNESS, microConfig, NODE_ARGS } from '../../test/cli-helpers.ts';
import { readSummary } from '../eval/train-summary.ts';

/** Ctrl-C (SIGINT) finishes the current RL step, saves a checkpoint and exits 130 (interrupted, not a success). */
let root: string;
beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sharp-train-sigint-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('sharp train: SIGINT', () => {
  it('finishes the current step, saves it as a checkpoint, and exits 130', async () => {
    const cfg = microConfig(root, 'int', 20);
    const runs = join(root, 'runs');
    const child = spawn(process.execPath, [...NODE_ARGS, HARNESS, 'train', '--config', cfg], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
    let run = '';
    // Polls while the child runs: its own progress, not this machine's clock, bounds the wait.
    let running = true;
    void exited.then(() => (running = false));
    while (running) {
      const mine = existsSync(runs) ? readdirSync(runs) : [];
      if (mine[0]) {
        run = join(runs, mine[0]);
        if ((await listCheckpoints(run)).length > 0) break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('SIGINT: finishing the current step');
    const summary = readSummary(run);
    expect(summary?.stopped).toBe(true);
    const stoppedAt = summary?.rlSteps as number;
    expect(stoppedAt).toBeGreaterThan(0);
    expect(stoppedAt).toBeLessThan(20);
    // The step it stopped at is saved: the newest checkpoint is that step, and it loads.
    const ckpts = await expectLoadable(run);
    expect(ckpts.at(-1)).toBe(stoppedAt);
    expect((await readTrainerState(join(run, 'checkpoints', `step-${String(stoppedAt).padStart(8, '0')}`))).step).toBe(
      stoppedAt,
    );
    expect(readMetrics(join(run, 'metrics.jsonl')).map((m) => m.step)).toEqual(
      Array.from({ length: stoppedAt }, (_, i) => i + 1),
    );
    expect(readFileSync(join(run, 'log.jsonl'), 'utf8')).toContain('stopped: checkpoint saved');
  }, 120_000);
});
