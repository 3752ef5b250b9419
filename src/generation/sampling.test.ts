import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { checkSampling, sampleNext, type SamplingParams } from './sampling.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

const LOGITS = [Math.log(0.1), Math.log(0.2), Math.log(0.7)]; // probabilities [0.1, 0.2, 0.7]

function pick(s: SamplingParams, u: number, forced = -1, logits = LOGITS): { id: number; lp: number } {
  return tf.tidy(() => {
    const out = sampleNext(
      tf.tensor2d(logits, [1, logits.length]),
      tf.tensor1d([u]),
      tf.tensor1d([forced], 'int32'),
      s,
    );
    return { id: out.ids.dataSync()[0] as number, lp: out.logprobs.dataSync()[0] as number };
  });
}

describe('sampleNext', () => {
  it('inverse CDF, hand-computed: cdf [0.1, 0.3, 1.0]: u=0.05 -> 0, u=0.25 -> 1, u=0.95 -> 2', () => {
    const s = { temperature: 1, topK: 0, topP: 1 };
    expect(pick(s, 0.05).id).toBe(0);
    expect(pick(s, 0.25).id).toBe(1);
    expect(pick(s, 0.95).id).toBe(2);
    // The logprob is the untempered log softmax of the chosen token.
    expect(pick(s, 0.25).lp).toBeCloseTo(Math.log(0.2), 5);
  });

  it('greedy, top-k 1 and a tiny top-p all pick the argmax; the logprob stays untempered', () => {
    expect(pick({ temperature: 0, topK: 0, topP: 1 }, 0.01).id).toBe(2);
    expect(pick({ temperature: 1, topK: 1, topP: 1 }, 0.01).id).toBe(2);
    expect(pick({ temperature: 1, topK: 0, topP: 0.5 }, 0.01).id).toBe(2);
    const hot = pick({ temperature: 2, topK: 1, topP: 1 }, 0.5);
    expect(hot.lp).toBeCloseTo(Math.log(0.7), 5);
  });

  it('top-p 0.75 keeps {0.7, 0.2} (0.7 < 0.75): renormalised cdf [0.7/0.9, 1]', () => {
    const s = { temperature: 1, topK: 0, topP: 0.75 };
    expect(pick(s, 0.7).id).toBe(2); // 0.7 < 0.778
    expect(pick(s, 0.8).id).toBe(1); // 0.8 > 0.778
    expect(pick(s, 0.999).id).toBe(1); // the 0.1 token is never chosen
  });

  it('top-k 2 keeps the two most likely: cdf [0.7/0.9, 1]', () => {
    const s = { temperature: 1, topK: 2, topP: 1 };
    expect(pick(s, 0.5).id).toBe(2);
    expect(pick(s, 0.9).id).toBe(1);
  });

  it('temperature flattens: T=1000 makes the three tokens ~uniform (u=0.5 -> middle token)', () => {
    expect(pick({ temperature: 1000, topK: 0, topP: 1 }, 0.5).id).toBe(1);
  });

  it('forced ids override the choice and get their own logprob', () => {
    const f = pick({ temperature: 0, topK: 0, topP: 1 }, 0.5, 0);
    expect(f.id).toBe(0);
    expect(f.lp).toBeCloseTo(Math.log(0.1), 5);
  });

  it('no forced tensor samples exactly as forced ids of -1 do', () => {
    const logits = tf.tensor2d([0.3, -1.2, 2.5, 0.7, 1.9, -0.4], [2, 3]); // [B, V]
    const u = tf.tensor1d([0.31, 0.87]); // [B]
    const none = tf.tensor1d([-1, -1], 'int32'); // [B]
    for (const s of [
      { temperature: 1, topK: 0, topP: 1 },
      { temperature: 0.7, topK: 2, topP: 0.9 },
      { temperature: 0, topK: 0, topP: 1 },
    ]) {
      const a = sampleNext(logits, u, undefined, s);
      const b = sampleNext(logits, u, none, s);
      expect(a.ids.dtype).toBe('int32');
      expect(Array.from(a.ids.dataSync())).toEqual(Array.from(b.ids.dataSync()));
      expect(Array.from(a.logprobs.dataSync())).toEqual(Array.from(b.logprobs.dataSync())); // bit for bit
      tf.dispose([a.ids, a.logprobs, b.ids, b.logprobs]);
    }
    tf.dispose([logits, u, none]);
  });

  it('bad parameters are one-line errors', () => {
    expect(() => checkSampling({ temperature: -1, topK: 0, topP: 1 })).toThrow(/temperature/);
    expect(() => checkSampling({ temperature: 1, topK: 1.5, topP: 1 })).toThrow(/topK/);
    expect(() => checkSampling({ temperature: 1, topK: 0, topP: 0 })).toThrow(/topP/);
  });
});
