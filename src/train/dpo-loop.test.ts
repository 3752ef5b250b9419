import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../tokenizer/fit.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import type { PreferencePair } from '../credit/first-error.ts';
import { readMetrics } from './metrics/jsonl.ts';
import { runDpo } from './dpo-loop.ts';

let root: string;
let tok: Tokenizer;
beforeAll(async () => {
  await initBackend('wasm');
  root = await mkdtemp(join(tmpdir(), 'sharp-dpoloop-'));
  await writeTokenizerFiles(join(root, 'tok'), fitBpeTokenizer(['Who founded Zorvex? <answer>Alin Marek</answer> <answer>1975</answer>'], 300));
  tok = await Tokenizer.load(join(root, 'tok'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const pair = (q: string, chosen: string, rejected: string): PreferencePair => ({
  prefix: [{ role: 'user', content: q }],
  chosen,
  rejected,
  metadata: { trajectoryId: 't', episodeId: 'e', messageIndex: 1, agent: 0, role: 'planner', judge: 'rule', attempts: 1 },
});

describe('runDpo', () => {
  it('starts at ln 2 against a frozen copy and learns to prefer the chosen answers', () => {
    const hf = hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: tok.vocabSize });
    const model = CausalLM.random(hf, 8);
    const ref = CausalLM.random(hf, 8);
    const n = tf.memory().numTensors;
    const r = runDpo({
      model,
      ref,
      enc: tok,
      padId: tok.padId,
      pairs: [pair('Who founded Zorvex?', '<answer>Alin Marek</answer>', '<answer>1975</answer>'), pair('When?', '<answer>1975</answer>', '<answer>Alin Marek</answer>')],
      steps: 6,
      batch: 2,
      lr: 1e-2,
      beta: 0.5,
      microBatch: 2,
      gradClip: 1,
      seed: 0,
      runDir: root,
    });
    expect(tf.memory().numTensors).toBe(n);
    expect(r.first['dpo/loss']).toBeCloseTo(Math.LN2, 5); // policy == reference at the first step
    expect(r.last['dpo/accuracy']).toBe(1);
    expect(r.last['dpo/loss']).toBeLessThan(0.3);
    expect(readMetrics(join(root, 'dpo-metrics.jsonl'))).toHaveLength(6);
    model.dispose();
    ref.dispose();
  });
});
