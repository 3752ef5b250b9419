import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../src/random/rng.ts';
import { HARNESS, microConfig, NODE_ARGS, sharp as sharpIn } from '../cli-helpers.ts';
import { readSummary } from '../../src/eval/train-summary.ts';
import { listCheckpoints } from '../../src/train/checkpoints/checkpoint.ts';
import { readMetrics } from '../../src/train/metrics/jsonl.ts';

/**
 * kill -9 at seeded random points of an RL run and of an eval, then resume; the result must equal
 * an uninterrupted run of the same seed: the same weights, metrics and predictions, with at most
 * checkpointEvery - 1 steps redone (the micro config checkpoints every step: none).
 */
const SEED = Number(process.env.SHARP_FAULT_SEED ?? 17);
const repo = resolve(import.meta.dirname, '../..');
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sharp-faults-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Metrics without wall-clock times and timings (they differ between any two runs). */
function stableMetrics(run: string): unknown[] {
  return readMetrics(join(run, 'metrics.jsonl')).map((m) =>
    Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('perf/') && k !== 'time')),
  );
}

async function finalWeights(run: string): Promise<Buffer> {
  const cps = await listCheckpoints(run);
  const last = cps.at(-1);
  if (!last) throw new Error(`${run}: no checkpoint`);
  return readFileSync(join(last.dir, 'model.safetensors'));
}

function newRun(runs: string, before: Set<string>): string | undefined {
  const d = existsSync(runs) ? readdirSync(runs).filter((x) => !before.has(x)) : [];
  return d[0] === undefined ? undefined : join(runs, d[0]);
}

describe('kill -9 and resume equals an uninterrupted run', () => {
  it(`RL (seed ${SEED}): killed after a random number of checkpoints plus a random delay, resumed`, async () => {
    const steps = 4;
    const cfg = microConfig(root, 'fault', steps);
    const runs = join(root, 'runs');
    const rng = new Rng(SEED);

    const ref = await sharpIn(root, ['train', '--config', cfg]);
    expect(ref.code, ref.stderr).toBe(0);
    const refRun = newRun(runs, new Set()) as string;

    const before = new Set(readdirSync(runs));
    const killAfter = rng.int(1, steps - 1); // checkpoints that must exist first
    const extraMs = rng.int(0, 30); // a step takes ~50 ms here: the kill lands inside the next one
    const child = spawn(process.execPath, [...NODE_ARGS, HARNESS, 'train', '--config', cfg], {
      cwd: root,
      stdio: 'ignore',
    });
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    let run: string | undefined;
    // Polls while the child runs: its own progress, not this machine's clock, bounds the wait.
    let running = true;
    void exited.then(() => (running = false));
    while (running) {
      run = newRun(runs, before);
      if (run && (await listCheckpoints(run)).length >= killAfter) break;
      await sleep(10);
    }
    await sleep(extraMs);
    child.kill('SIGKILL');
    await exited;
    expect(run).toBeDefined();
    const saved = (await listCheckpoints(run as string)).map((c) => c.step);
    const last = saved.at(-1) ?? 0;
    expect(last).toBeLessThan(steps); // killed mid-run, not after it finished

    const r = await sharpIn(root, ['train', '--resume', run as string]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    const summary = readSummary(run as string);
    expect(summary?.resumedFrom).toBe(last); // redone: only the steps after the last checkpoint
    expect(stableMetrics(run as string)).toEqual(stableMetrics(refRun));
    expect((await finalWeights(run as string)).equals(await finalWeights(refRun))).toBe(true);
  }, 900_000);

  it(`eval (seed ${SEED}): killed after a random number of predictions, resumed`, async () => {
    const rng = new Rng(SEED + 1);
    const bin = join(repo, 'bin/sharp.js');
    const synth = join(root, 'synth.jsonl');
    const cli = (args: string[]) =>
      new Promise<number | null>((res) => {
        const c = spawn(process.execPath, [bin, ...args], { cwd: root, stdio: 'ignore' });
        c.on('exit', (code) => res(code));
      });
    // 60 synthetic episodes for the scripted expert: 4 batches of 16, each logged as it finishes.
    expect(await cli(['data', 'synth', '--n', '60', '--seed', '3', '--out', synth])).toBe(0);
    const base = ['eval', '--bench', 'musique', '--data', synth, '--policy', 'expert'];
    const refOut = join(root, 'eval-ref');
    expect(await cli([...base, '--out', refOut])).toBe(0);

    const out = join(root, 'eval-killed');
    const killAt = rng.int(1, 44); // predictions logged before the kill; at least one batch remains
    const child = spawn(process.execPath, [bin, ...base, '--out', out], { cwd: root, stdio: 'ignore' });
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    const log = join(out, 'predictions.log.jsonl');
    // Polls while the child runs: its own progress, not this machine's clock, bounds the wait.
    let running = true;
    void exited.then(() => (running = false));
    while (running) {
      if (existsSync(log) && readFileSync(log, 'utf8').split('\n').filter(Boolean).length >= killAt) break;
      await sleep(5);
    }
    child.kill('SIGKILL');
    await exited;
    expect(existsSync(join(out, 'predictions.jsonl'))).toBe(false); // killed before the end
    expect(await cli([...base, '--out', out])).toBe(0);
    for (const f of ['predictions.jsonl', 'gold.jsonl', 'metrics.json']) {
      expect(readFileSync(join(out, f), 'utf8'), f).toBe(readFileSync(join(refOut, f), 'utf8'));
    }
  }, 600_000);

  it('a damaged trainer_state.json in the checkpoint --resume picks is one line and exit 2, no stack', async () => {
    const cfg = microConfig(root, 'damaged', 2);
    const runs = join(root, 'runs');
    const before = new Set(existsSync(runs) ? readdirSync(runs) : []);
    const first = await sharpIn(root, ['train', '--config', cfg]);
    expect(first.code, first.stderr).toBe(0);
    const run = newRun(runs, before) as string;
    const last = (await listCheckpoints(run)).at(-1) as { dir: string };
    const state = join(last.dir, 'trainer_state.json');
    writeFileSync(state, readFileSync(state, 'utf8').slice(0, 25)); // cut mid-write
    const r = await sharpIn(root, ['train', '--resume', run]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(
      r.stderr
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('sharp:')),
      r.stderr,
    ).toHaveLength(1);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(
      new RegExp(
        `^sharp: ${state.replace(/[/.]/g, '\\$&')}: cannot read trainer state \\(.+\\): this checkpoint is ` +
          `damaged; delete ${last.dir.replace(/[/.]/g, '\\$&')} to resume from the one before it$`,
      ),
    );
  }, 600_000);
});
