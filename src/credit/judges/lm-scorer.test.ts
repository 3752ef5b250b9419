import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, afterAll, describe, it, expect } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import type { Episode } from '../../data/episode.ts';
import { makeTrajectory } from '../../../test/credit-fixtures.ts';
import { lmCandidateScorer } from './lm-scorer.ts';
import { llmJudge } from './llm.ts';

const TINY = resolve(import.meta.dirname, '../../../../shared/models/tinystories-260k');
const have = existsSync(resolve(TINY, 'model.safetensors'));

describe.skipIf(!have)('LM scorer on tinystories-260k', () => {
  let model: CausalLM;
  let tok: Tokenizer;
  beforeAll(async () => {
    await initBackend('wasm');
    model = await CausalLM.load(TINY);
    tok = await Tokenizer.load(TINY);
  });
  afterAll(() => model?.dispose());

  it('equals the sum of log_softmax(forward) over the candidate tokens (independent path)', async () => {
    const score = lmCandidateScorer(model, tok);
    const prompt = 'Once upon a time, there was a little';
    const cands = [' girl', ' rock', ' dog named Max'];
    const got = await score(prompt, cands);
    for (const [i, c] of cands.entries()) {
      const ids = [...(tok.bosId !== undefined ? [tok.bosId] : []), ...tok.encode(prompt, { addSpecialTokens: false })];
      const p = ids.length;
      const cIds = tok.encode(c, { addSpecialTokens: false });
      const all = [...ids, ...cIds];
      const want = tf.tidy(() => {
        // [1, T, V]
        const ls = tf.logSoftmax(model.forward(tf.tensor2d(all, [1, all.length], 'int32'))).arraySync() as number[][][];
        return cIds.reduce((s, id, j) => s + ls[0][p + j - 1][id], 0);
      });
      expect(Math.abs(got[i] - want)).toBeLessThan(1e-4);
    }
    // the story model prefers the common continuation
    expect(got[0]).toBeGreaterThan(got[1]);
  });

  it('drives the LLM judge with a flat tensor count', async () => {
    const judge = llmJudge({ score: lmCandidateScorer(model, tok, 160) });
    const episode: Episode = { id: 'ep', question: 'Who has the red ball?', answers: ['Lily'], paragraphs: [] };
    const traj = makeTrajectory({
      id: 't',
      workers: [{ subtask: 'Who has the ball?', answer: 'Tom' }],
      finalAnswer: 'Tom',
    });
    const before = tf.memory().numTensors;
    const verdicts: boolean[] = [];
    for (let i = 0; i < 2; i++) verdicts.push(await judge.prefixFailed({ traj, episode }, traj.messages.length - 1));
    expect(tf.memory().numTensors).toBe(before);
    // deterministic: the same question gets the same verdict
    expect(new Set(verdicts).size).toBe(1);
  });
});
