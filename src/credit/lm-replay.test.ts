import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { creditSection } from '../config/sections/credit.ts';
import { generateSynth } from '../data/synth/generate.ts';
import { toEpisode } from '../data/synth/record.ts';
import { LmPolicy } from '../rollout/lm-policy.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { rollout } from '../rollout/engine.ts';
import { expertPolicy } from '../rollout/scripted/expert.ts';
import { rolloutConfig } from '../../test/rollout-fixtures.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { computeCredits } from './compute.ts';
import { engineReplayRunner } from './engine-adapters.ts';

/**
 * Counterfactual replays driven by a real language model (tinystories-260k, which knows stories, not
 * our protocol): the expert's solved trajectories are replayed in `final` mode, where the LM writes
 * the planner's final answer. The story model never writes the gold answer, so every coalition, N
 * included, is worth 0: each Delta is exactly 0 although the recorded outcome is a success, and the
 * noise floor is 1 (the recorded outcome is not what the replays measure). The replays must leave no
 * tensors behind.
 */
const TINY = resolve(import.meta.dirname, '../../../shared/models/tinystories-260k');

describe.skipIf(!existsSync(resolve(TINY, 'model.safetensors')))('credit replays with an LM policy', () => {
  let model: CausalLM;
  let tok: Tokenizer;
  beforeAll(async () => {
    await initBackend('wasm');
    model = await CausalLM.load(TINY);
    tok = await Tokenizer.load(TINY);
  });
  afterAll(async () => {
    model?.dispose();
    await closeCodeSandbox();
  });

  it(
    'one batched replay run per group, v(N) replayed like every coalition: Delta = 0, noise floor 1, tensor count ' +
      'flat',
    async () => {
      const episodes = generateSynth({ seed: 3, n: 2, minHops: 2, maxHops: 2 }).map(toEpisode);
      const rcfg = rolloutConfig({ maxNewTokens: 8, maxContext: 512 });
      const { trajectories } = await rollout(expertPolicy(), episodes, { cfg: rcfg, groupSize: 2 });
      const lm = new LmPolicy(model, tok, { temperature: 1, topK: 0, topP: 1, maxContext: 512, rng: new Rng(5) });
      const cfg = creditSection.parse({ method: 'shapley', replayMode: 'final', replays: 2 });
      const runner = engineReplayRunner(lm, { cfg: rcfg }, { ...cfg, streamSeed: 9 });
      let calls = 0;
      const counted = (items: Parameters<typeof runner>[0]) => {
        calls += 1;
        return runner(items);
      };
      const before = tf.memory().numTensors;
      for (const [e, episode] of episodes.entries()) {
        const group = trajectories.slice(2 * e, 2 * e + 2);
        expect(group.every((t) => t.finalAnswer === episode.answers[0])).toBe(true);
        const r = await computeCredits(group, episode, counted, cfg);
        for (const t of r.trajectories) {
          expect(t.k).toBe(2);
          expect(t.success).toBe(1);
          expect(t.deltas).toEqual([0, 0]);
          expect(t.phi).toEqual([0, 0]);
          expect(t.noise).toBe(1);
        }
        expect(r.report.noiseFloor).toBe(1);
        expect(r.stats.replayItems).toBe(2 * 4 * 2); // 2 trajectories x 4 coalitions (N included) x 2 replays
      }
      expect(calls).toBe(2);
      expect(tf.memory().numTensors).toBe(before);
    },
  );
});
