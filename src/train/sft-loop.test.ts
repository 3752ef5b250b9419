import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../tokenizer/fit.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { readMetrics } from './metrics/jsonl.ts';
import { readTranscripts } from './transcripts-jsonl.ts';
import { runSft } from './sft-loop.ts';

let root: string;
let tok: Tokenizer;
beforeAll(async () => {
  await initBackend('wasm');
  root = await mkdtemp(join(tmpdir(), 'sharp-sftloop-'));
  await writeTokenizerFiles(join(root, 'tok'), fitBpeTokenizer(['Who founded Zorvex? <answer>Alin Marek</answer> When? <answer>1975</answer>'], 300));
  tok = await Tokenizer.load(join(root, 'tok'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('runSft', () => {
  it('fits two transcripts: loss falls from ~ln V, metrics written, tensors flat', async () => {
    const file = join(root, 'sft.jsonl');
    const conv = (q: string, a: string) => JSON.stringify({ messages: [{ role: 'user', content: q, train: false }, { role: 'assistant', content: a, train: true }] });
    await writeFile(file, [conv('Who founded Zorvex?', '<answer>Alin Marek</answer>'), conv('When?', '<answer>1975</answer>')].join('\n') + '\n');
    const model = CausalLM.random(hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: tok.vocabSize }), 2);
    const n = tf.memory().numTensors;
    const r = runSft({ model, enc: tok, padId: tok.padId, transcripts: readTranscripts(file), steps: 25, batch: 2, lr: 1e-2, microBatch: 2, gradClip: 1, seed: 0, runDir: root });
    expect(tf.memory().numTensors).toBe(n);
    expect(r.sequences).toBe(2);
    // ln(300) = 5.70 for a near-uniform random init
    expect(r.firstLoss).toBeGreaterThan(5.3);
    expect(r.lastLoss).toBeLessThan(0.5);
    const m = readMetrics(join(root, 'sft-metrics.jsonl'));
    expect(m.map((x) => x.step)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(m[24]?.['sft/loss']).toBeCloseTo(r.lastLoss, 6);
    model.dispose();
  });
});
