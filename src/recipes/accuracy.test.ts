import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { configSchema } from '../config/schema.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { expertPolicy } from '../rollout/scripted/expert.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../tokenizer/fit.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { heldOutAccuracy, policyAccuracy } from './accuracy.ts';
import { loadTrainData } from './data.ts';

beforeAll(async () => initBackend('wasm'));
afterAll(async () => closeCodeSandbox());

describe('held-out accuracy', () => {
  const cfg = configSchema.parse({ data: { synthetic: { seed: 2, train: 1, heldOut: 4, minHops: 2, maxHops: 2 } }, rollout: { maxNewTokens: 8 } });
  const { heldOut } = loadTrainData(cfg.data);

  it('scores one trajectory per episode with the training success function', async () => {
    // The scripted expert solves every synthetic 2-hop question: 4 / 4.
    expect(await policyAccuracy(expertPolicy(), heldOut, cfg)).toMatchObject({ accuracy: 1, correct: 4, total: 4, answered: 1 });
    // A saboteur worker answers the last hop wrongly on every episode: it answers, but 0 / 4 are right.
    const sabotaged = expertPolicy({ steps: () => [{ kind: 'hop', hop: 0 }, { kind: 'hop', hop: 1, sabotage: 'Nobody Atall' }] });
    expect(await policyAccuracy(sabotaged, heldOut, cfg)).toMatchObject({ accuracy: 0, correct: 0, total: 4, answered: 1 });
  });

  it('runs the LM greedily through the engine (a random init answers nothing)', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'sharp-acc-')), 'tok');
    await writeTokenizerFiles(dir, fitBpeTokenizer(heldOut.map((e) => e.question), 300));
    const tok = await Tokenizer.load(dir);
    const model = CausalLM.random(hfConfigFor({ arch: 'llama', layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, vocab: tok.vocabSize }), 0);
    const a = await heldOutAccuracy(model, tok, heldOut.slice(0, 2), cfg);
    const b = await heldOutAccuracy(model, tok, heldOut.slice(0, 2), cfg);
    expect(a).toMatchObject({ accuracy: 0, correct: 0, total: 2, answered: 0 });
    expect({ ...b, seconds: 0 }).toEqual({ ...a, seconds: 0 }); // greedy: the same result twice
    model.dispose();
  });
});
