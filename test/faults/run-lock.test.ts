import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../src/run/run-lock.ts';
import { listCheckpoints } from '../../src/train/checkpoints/checkpoint.ts';
import { readMetrics } from '../../src/train/metrics/jsonl.ts';
import { HARNESS, microConfig, NODE_ARGS, sharp } from '../cli-helpers.ts';

/**
 * One writer per run folder, with real processes: `sharp train --resume RUN` while another process
 * trains RUN is refused in one line (exit 2) and the first run's metrics stay 1, 2, 3, ...; a lock
 * left by a process killed with -9 is taken over by the next resume; a fresh run that stops on bad
 * input before any work leaves no run folder behind.
 */
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sharp-run-lock-faults-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function startTrain(args: string[]) {
  const child = spawn(process.execPath, [...NODE_ARGS, HARNESS, 'train', ...args], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, done, stderr: () => stderr };
}

async function waitForCheckpoint(runs: string, name: string): Promise<string> {
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    const d = existsSync(runs) ? readdirSync(runs).find((x) => x.startsWith(`${name}-`)) : undefined;
    if (d && (await listCheckpoints(join(runs, d))).length >= 1) return join(runs, d);
    await sleep(20);
  }
  throw new Error(`no checkpoint of ${name} within 300 s`);
}

describe('one writer per run folder', () => {
  it('a second `sharp train --resume` of a run in training is refused in one line; the run ends intact', async () => {
    const steps = 6;
    const cfg = microConfig(root, 'busy', steps);
    const first = startTrain(['--config', cfg]);
    const run = await waitForCheckpoint(join(root, 'runs'), 'busy');
    // Paused mid-run (alive, holding its lock) so the second process surely meets it training.
    first.child.kill('SIGSTOP');
    const lock = JSON.parse(readFileSync(join(run, LOCK_FILE), 'utf8')) as { pid: number; command: string };
    expect(lock.pid).toBe(first.child.pid);

    for (const args of [
      ['--resume', run],
      ['--config', cfg, '--resume'],
    ]) {
      const second = await sharp(root, ['train', ...args]);
      expect(first.child.exitCode).toBeNull();
      expect(second.code).toBe(2);
      expect(second.stderr.trim().split('\n')).toEqual([
        `sharp: run folder ${run} is in use by process ${first.child.pid} (sharp train --config ${cfg}, since ` +
          `${(JSON.parse(readFileSync(join(run, LOCK_FILE), 'utf8')) as { since: string }).since}); only one ` +
          `process may write a run at a time (if that process is gone, delete ${join(run, LOCK_FILE)})`,
      ]);
    }

    first.child.kill('SIGCONT');
    expect(await first.done, first.stderr()).toBe(0);
    expect(readMetrics(join(run, 'metrics.jsonl')).map((m) => m.step)).toEqual(
      Array.from({ length: steps }, (_, i) => i + 1),
    );
    expect(existsSync(join(run, LOCK_FILE))).toBe(false); // released at exit
  }, 900_000);

  it('a lock left by kill -9 is taken over by the resume, which finishes the run', async () => {
    const steps = 4;
    const cfg = microConfig(root, 'killed', steps);
    const first = startTrain(['--config', cfg]);
    const run = await waitForCheckpoint(join(root, 'runs'), 'killed');
    first.child.kill('SIGKILL');
    await first.done;
    expect(JSON.parse(readFileSync(join(run, LOCK_FILE), 'utf8')).pid).toBe(first.child.pid); // stale, left behind
    const r = await sharp(root, ['train', '--resume', run]);
    expect(r.code, r.stderr).toBe(0);
    expect(
      readMetrics(join(run, 'metrics.jsonl'))
        .map((m) => m.step)
        .at(-1),
    ).toBe(steps);
    expect(existsSync(join(run, LOCK_FILE))).toBe(false);
  }, 900_000);

  it('a fresh run stopped by bad input before any work leaves no run folder', async () => {
    const empty = join(root, 'empty.yaml');
    writeFileSync(empty, '');
    const runs = join(root, 'empty-runs');
    const r = await sharp(root, [
      'train',
      '--config',
      empty,
      '--set',
      `run.dir=${runs}`,
      '--set',
      'data.synthetic.train=12',
      '--set',
      'data.synthetic.heldOut=2',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toBe(
      "sharp: model.path 'checkpoints/quickstart-init' has no config.json (set model.init.enabled to create a " +
        'random-init model there)',
    );
    expect(readdirSync(runs)).toEqual([]);
  }, 300_000);
});
