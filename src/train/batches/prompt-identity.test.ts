import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { generateSynth } from '../../data/synth/generate.ts';
import { toEpisode } from '../../data/synth/record.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import { rollout } from '../../rollout/engine.ts';
import { closeCodeSandbox } from '../../tools/code.ts';
import { rolloutConfig } from '../../../test/rollout-fixtures.ts';
import { createTinyLm, type TinyLm } from '../../../test/tiny-lm.ts';
import { trajectorySequences } from './sequences.ts';

/**
 * The prompt the policy generated from and the prompt the trainer re-scores are one rendering
 * (renderPromptIds): sampled at temperature 1 with no top-k/top-p, the logprob the policy recorded
 * for every generated token equals the logprob the training forward pass computes for it in the
 * sequence the trainer builds. A prompt that differed by one token would move these numbers.
 */
let lm: TinyLm;
beforeAll(async () => {
  await initBackend('wasm');
  lm = await createTinyLm({ seed: 3 });
});
afterAll(async () => {
  await lm.dispose();
  await closeCodeSandbox();
});

describe('generation and training see the same prompt ids', () => {
  it('every recorded sampling logprob equals the trainer recomputation over its sequence', async () => {
    const cfg = rolloutConfig({
      plannerPrompt: 'Plan.',
      workerPrompt: 'Work.',
      maxNewTokens: 12,
      maxContext: 384,
      maxPlannerTurns: 2,
      maxWorkerTurns: 2,
    });
    const episodes = generateSynth({ seed: 21, n: 2 }).map(toEpisode);
    const { trajectories } = await rollout(lm.policy({ seed: 4, maxContext: cfg.maxContext }), episodes, {
      cfg,
      groupSize: 3,
    });
    let checked = 0;
    let worst = 0;
    for (const t of trajectories) {
      const adv = t.agents.map(() => 0);
      for (const seq of trajectorySequences(t, adv, lm.tokenizer, { pack: false })) {
        const got = tf.tidy(() => {
          const ids = tf.tensor2d([seq.ids], [1, seq.ids.length], 'int32'); // [1, T]
          const mask = tf.ones([1, seq.ids.length], 'int32') as tf.Tensor2D; // [1, T]
          return tokenLogprobs(lm.model, ids, mask).arraySync()[0] as number[]; // [T-1]
        });
        for (let i = 1; i < seq.ids.length; i++) {
          if (seq.trainMask[i] !== 1) continue;
          worst = Math.max(worst, Math.abs((got[i - 1] as number) - (seq.sampleLogp[i] as number)));
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(40);
    // float32 rounding between the cached decode and the full forward pass; a prompt one token shorter moves it to
    // ~5e-3
    expect(worst).toBeLessThan(1e-4);
  });
});
