import { spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'vitest';
import { CausalLM } from '../src/model/causal-lm.ts';
import { AdamW } from '../src/train/optim/adamw.ts';
import { listCheckpoints, loadOptimizerState, readTrainerState } from '../src/train/checkpoints/checkpoint.ts';

/**
 * Helpers of the `sharp train` CLI tests: the real program spawned as a child process through
 * bin/sharp.js (exactly what `npx sharp` runs), on a micro config (2-layer d=64
 * model created on the fly, 12 synthetic questions, 2 SFT steps, a few RL steps).
 */
const REPO = resolve(import.meta.dirname, '..');
// node itself with tsx's loader (not the tsx binary, which forks a second process that SIGKILL would orphan).
export const NODE_ARGS = ['--import', pathToFileURL(join(REPO, 'node_modules/tsx/dist/loader.mjs')).href];
export const HARNESS = join(REPO, 'bin/sharp.js');

/** `sftSteps`: SFT steps before RL (2 unless a test needs an SFT long enough to be killed in). */
export function microConfig(dir: string, name: string, steps: number, sftSteps = 2): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `run: {name: ${name}, dir: ${join(dir, 'runs')}, seed: 0, backend: wasm}`,
      `model: {path: ${join(dir, `${name}-model`)}, init: {enabled: true, layers: 2, hidden: 64, heads: 4, ` +
        `kvHeads: 2, intermediate: 128, vocab: 400}}`,
      'data: {synthetic: {seed: 1, train: 12, heldOut: 3, minHops: 2, maxHops: 2}}',
      'rollout: {groupSize: 2, maxNewTokens: 12, maxContext: 512, maxPlannerTurns: 3, maxDelegations: 2, ' +
        'maxWorkerTurns: 2}',
      `train: {steps: ${steps}, batchQuestions: 2, checkpointEvery: 1, keepCheckpoints: 20, microBatch: 8, lr: 0.001,`,
      `        sft: {data: ${join(dir, `${name}-transcripts.jsonl`)}, steps: ${sftSteps}, batch: 4, lr: 0.002}}`,
      '',
    ].join('\n'),
  );
  return file;
}

/** Runs the CLI to completion (async: a blocking spawnSync would starve vitest's worker RPC). */
export function sharp(root: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [...NODE_ARGS, HARNESS, ...args], {
      cwd: root,
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => res({ code, stdout, stderr }));
  });
}

export function onlyRun(runs: string): string {
  const dirs = readdirSync(runs);
  expect(dirs).toHaveLength(1);
  return join(runs, dirs[0] as string);
}

/** Every complete checkpoint loads: weights, AdamW state, trainer state. */
export async function expectLoadable(runDir: string): Promise<number[]> {
  const steps: number[] = [];
  for (const c of await listCheckpoints(runDir)) {
    const state = await readTrainerState(c.dir);
    expect(state.step).toBe(c.step);
    const model = await CausalLM.load(c.dir);
    const opt = new AdamW({ lr: 1e-3 });
    await loadOptimizerState(c.dir, model, opt);
    opt.dispose();
    model.dispose();
    steps.push(c.step);
  }
  return steps;
}
