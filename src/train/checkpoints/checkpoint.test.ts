import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { AdamW } from '../optim/adamw.ts';
import { Rng } from '../../random/rng.ts';
import { UserError } from '../../errors.ts';
import {
  assertSameConfig,
  configHash,
  latestCheckpoint,
  listCheckpoints,
  loadOptimizerState,
  readTrainerState,
  saveCheckpoint,
  type TrainerState,
} from './checkpoint.ts';

const CFG = hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 50 });

let runDir: string;
beforeAll(async () => {
  await initBackend('wasm');
  runDir = await mkdtemp(join(tmpdir(), 'sharp-ckpt-'));
});
afterAll(async () => {
  await rm(runDir, { recursive: true, force: true });
});

/** One deterministic AdamW step on every variable (gradient = sin of the index, scaled by k). */
function step(model: CausalLM, opt: AdamW, k: number): void {
  tf.tidy(() => {
    const grads: tf.NamedTensorMap = {};
    for (const v of model.trainableVariables())
      grads[v.name] = tf.mul(tf.sin(tf.reshape(tf.range(0, v.size), v.shape)), 0.01 * k);
    opt.applyGradients(grads);
  });
}

const weightsOf = (m: CausalLM): Map<string, Float32Array> =>
  new Map([...m.namedVariables()].map(([n, v]) => [n, v.dataSync() as Float32Array]));

describe('checkpoints', () => {
  it('round-trips model, optimizer and trainer state; keeps the last N; survives a crash mid-write', async () => {
    const model = CausalLM.random(CFG, 3);
    const opt = new AdamW({ lr: 1e-2, weightDecay: 0.1 });
    const rng = new Rng(11);
    const hash = configHash({ train: { lr: 1e-2 }, run: { seed: 11 } });
    const state = (s: number): TrainerState => ({ step: s, dataCursor: 4 * s, rng: rng.state(), configHash: hash });

    for (let s = 1; s <= 3; s++) {
      step(model, opt, s);
      rng.int(0, 100);
      await saveCheckpoint(runDir, { model, optimizer: opt, state: state(s), keep: 2 });
    }
    expect((await listCheckpoints(runDir)).map((c) => c.step)).toEqual([2, 3]); // step 1 pruned
    const latest = await latestCheckpoint(runDir);
    expect(latest?.step).toBe(3);
    const dir = latest?.dir as string;
    expect((await readdir(dir)).sort()).toEqual([
      'config.json',
      'model.safetensors',
      'optimizer.safetensors',
      'trainer_state.json',
    ]);

    // Crash during the save of step 4: a temp folder with a half-written model and no trainer state.
    const crashed = join(runDir, 'checkpoints', '.tmp-step-00000004-99999');
    await mkdir(crashed, { recursive: true });
    await writeFile(join(crashed, 'model.safetensors'), new Uint8Array(100));
    expect((await latestCheckpoint(runDir))?.step).toBe(3); // the complete checkpoint is untouched

    // Resume from step 3 in "another process": fresh model + optimizer from the folder.
    const restored = await CausalLM.load(dir);
    const opt2 = new AdamW({ lr: 1e-2, weightDecay: 0.1 });
    await loadOptimizerState(dir, restored, opt2);
    const ts = await readTrainerState(dir);
    expect(ts).toEqual({ step: 3, dataCursor: 12, rng: ts.rng, configHash: hash });
    expect(Rng.fromState(ts.rng).int(0, 1_000_000)).toBe(Rng.fromState(rng.state()).int(0, 1_000_000));
    expect(opt2.step).toBe(3);

    // One more identical step on both: the weights agree to 1e-6 (model save is lossless F32).
    step(model, opt, 4);
    step(restored, opt2, 4);
    const a = weightsOf(model);
    const b = weightsOf(restored);
    let maxDiff = 0;
    for (const [n, x] of a) {
      const y = b.get(n) as Float32Array;
      for (let i = 0; i < x.length; i++) maxDiff = Math.max(maxDiff, Math.abs((x[i] as number) - (y[i] as number)));
    }
    expect(maxDiff).toBeLessThan(1e-6);

    // The next save removes the crashed temp folder and prunes again.
    await saveCheckpoint(runDir, { model, optimizer: opt, state: state(4), keep: 2 });
    expect(existsSync(crashed)).toBe(false);
    expect((await listCheckpoints(runDir)).map((c) => c.step)).toEqual([3, 4]);
    // Re-saving an existing step replaces it whole.
    await saveCheckpoint(runDir, { model, optimizer: opt, state: { ...state(4), dataCursor: 99 }, keep: 2 });
    expect((await readTrainerState(join(runDir, 'checkpoints', 'step-00000004'))).dataCursor).toBe(99);

    model.dispose();
    restored.dispose();
    opt.dispose();
    opt2.dispose();
  });

  it('hashes configs independently of key order', () => {
    expect(configHash({ a: 1, b: { c: [1, 2], d: 'x' } })).toBe(configHash({ b: { d: 'x', c: [1, 2] }, a: 1 }));
    expect(configHash({ a: 1 })).not.toBe(configHash({ a: 2 }));
  });

  it('names the field of an invalid trainer_state.json', async () => {
    const dir = join(runDir, 'bad');
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'trainer_state.json'),
      JSON.stringify({ step: -1, dataCursor: 0, rng: [], configHash: 'x' }),
    );
    await expect(readTrainerState(dir)).rejects.toThrow(/trainer_state\.json: field 'step'/);
  });
});

describe('assertSameConfig: the one resume check', () => {
  it('passes the same config, refuses another in one line', () => {
    const hash = configHash({ train: { lr: 1e-3, steps: 4 } });
    expect(() =>
      assertSameConfig('/r/step-00000002', { configHash: configHash({ train: { steps: 4, lr: 1e-3 } }) }, hash),
    ).not.toThrow();
    expect(() =>
      assertSameConfig('/r/step-00000002', { configHash: configHash({ train: { lr: 2e-3, steps: 4 } }) }, hash),
    ).toThrow(
      new UserError(
        'resume: /r/step-00000002 was written under another config (its config.yaml differs from this one: a ' +
          '--config or --set changed it); resume with the config.yaml of the run (no --config, no --set), or start ' +
          'a new run',
      ),
    );
  });
});

describe('readTrainerState of a damaged checkpoint', () => {
  it('a truncated or wrong trainer_state.json is one UserError line naming the file and the way back', async () => {
    const dir = join(runDir, 'checkpoints', 'step-00000009');
    await mkdir(dir, { recursive: true });
    const file = join(dir, 'trainer_state.json');
    await writeFile(file, '{"step": 9, "dataCur');
    const err = await readTrainerState(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^${file.replace(/[/.]/g, '\\$&')}: cannot read trainer state \\(.+\\): this checkpoint is damaged; ` +
          `delete ${dir.replace(/[/.]/g, '\\$&')} to resume from the one before it$`,
      ),
    );
    await writeFile(file, '[1, 2]');
    const wrong = await readTrainerState(dir).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(UserError);
    expect((wrong as Error).message).toMatch(
      /trainer_state\.json: field '': .*: this checkpoint is damaged; delete .*step-00000009 to resume from the one before it$/,
    );
  });
});
