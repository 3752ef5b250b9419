import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { generate } from '../../generation/generate.ts';
import { configSchema } from '../../config/schema.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../../tokenizer/fit.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { creditSection } from '../../config/sections/credit.ts';
import type { Episode } from '../../data/episode.ts';
import type { RolledOut, StepStages } from './types.ts';
import type { Message, Trajectory } from '../../rollout/types.ts';
import type { Rng } from '../../random/rng.ts';
import { readMetrics } from '../metrics/jsonl.ts';
import { listCheckpoints } from '../checkpoints/checkpoint.ts';
import { batchAt, runGrpo, type GrpoRunOptions } from './loop.ts';

// A single-agent task for the loop: the "question" is a word, the answer is right when most of the
// generated tokens have an even id. The groups are real generations from the model, recorded as
// one-agent trajectories; their credit comes from the credit stages (broadcast).
let root: string;
let tok: Tokenizer;
let tokDir: string;
beforeAll(async () => {
  await initBackend('wasm');
  root = await mkdtemp(join(tmpdir(), 'sharp-loop-'));
  tokDir = join(root, 'tok');
  await writeTokenizerFiles(tokDir, fitBpeTokenizer(['alpha beta gamma delta epsilon zeta eta theta'], 290));
  tok = await Tokenizer.load(tokDir);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

// The answer is "yes" when most of the generated tokens have an even id (what the policy learns), and
// the broadcast credit scores it against the gold "yes".
const QUESTIONS: Episode[] = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'].map((q) => ({
  id: q,
  question: q,
  answers: ['yes'],
  paragraphs: [],
}));
const G = 4;
const credit = creditSection.parse({ method: 'broadcast' });

async function rolloutOf(items: readonly Episode[], model: CausalLM, rng: Rng): Promise<RolledOut> {
  const prompts = items.map((q) => [{ role: 'user' as const, content: q.question }]);
  const reqs = prompts.flatMap((p) =>
    Array.from({ length: G }, () => ({ promptIds: tok.encodeChat(p, { addGenerationPrompt: true }), maxNewTokens: 5 })),
  );
  const out = await generate(model, reqs, {
    temperature: 1,
    topK: 0,
    topP: 1,
    rng,
    eosIds: tok.eosIds,
    padId: tok.padId,
    decoder: tok,
  });
  return {
    groups: items.map((episode, qi) => {
      const trajectories: Trajectory[] = [];
      for (let s = 0; s < G; s++) {
        const g = out[qi * G + s];
        if (!g) throw new Error('missing generation');
        const id = `${episode.id}/${s}`;
        const messages: Message[] = [
          {
            index: 0,
            agent: 0,
            role: 'planner',
            chatRole: 'user',
            text: episode.question,
            tokenIds: [],
            logprobs: [],
            toolCalls: [],
          },
          {
            index: 1,
            agent: 0,
            role: 'planner',
            chatRole: 'assistant',
            text: g.text,
            tokenIds: g.tokenIds,
            logprobs: g.logprobs,
            toolCalls: [],
          },
        ];
        const answer = g.tokenIds.filter((t) => t % 2 === 0).length * 2 > g.tokenIds.length ? 'yes' : 'no';
        trajectories.push({
          id,
          episodeId: episode.id,
          sample: s,
          messages,
          agents: [{ id: 0, role: 'planner', delegation: null, answer, endReason: 'answer' }],
          finalAnswer: answer,
        });
      }
      return { episode, trajectories };
    }),
    policyCalls: out.length,
    maxBatch: out.length,
  };
}

/** One-agent generations as the rollout stage; no replays (broadcast credit plans none). */
function stagesOf(rollout: typeof rolloutOf = rolloutOf): StepStages {
  return {
    begin: async (model, seeds) => ({
      rollout: (items) => rollout(items, model, seeds.rng),
      runReplays: async (plans) => plans.map(() => []),
      scoreLikelihoods: async (plans) => plans.map(() => []),
      assignOptions: {},
    }),
    close: () => Promise.resolve(),
  };
}

const config = configSchema.parse({
  train: {
    steps: 4,
    batchQuestions: 2,
    lr: 5e-3,
    checkpointEvery: 2,
    keepCheckpoints: 2,
    microBatch: 4,
    schedule: 'cosine',
    warmupSteps: 1,
  },
});
const HF = hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 290 });

function options(runDir: string, extra: Partial<GrpoRunOptions> = {}): GrpoRunOptions {
  return {
    runDir,
    train: config.train,
    seed: 17,
    fullConfig: config,
    initialModel: async () => CausalLM.random(HF, 3),
    data: QUESTIONS,
    stages: stagesOf(),
    credit,
    enc: tok,
    padId: tok.padId,
    progress: false,
    checkpointFiles: [join(tokDir, 'tokenizer.json'), join(tokDir, 'tokenizer_config.json')],
    ...extra,
  };
}

const weights = (m: CausalLM) => new Map([...m.namedVariables()].map(([n, v]) => [n, Float32Array.from(v.dataSync())]));
function maxDiff(a: Map<string, Float32Array>, b: Map<string, Float32Array>): number {
  let d = 0;
  for (const [n, x] of a) {
    const y = b.get(n) as Float32Array;
    for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs((x[i] as number) - (y[i] as number)));
  }
  return d;
}

describe('batchAt', () => {
  it('walks seeded per-epoch permutations by cursor', () => {
    const data = [0, 1, 2, 3, 4];
    const all = batchAt(data, 0, 10, 1);
    expect([...all.slice(0, 5)].sort()).toEqual(data); // epoch 0 is a permutation
    expect([...all.slice(5)].sort()).toEqual(data); // so is epoch 1
    expect(batchAt(data, 3, 4, 1)).toEqual(all.slice(3, 7)); // the cursor alone locates a batch
  });
});

describe('runGrpo', () => {
  it('4 steps straight == 2 steps, stop (Ctrl-C), resume, 2 steps (1e-6); a crash loses only unsaved steps', async () => {
    const t0 = tf.memory().numTensors;
    const straight = await runGrpo(options(join(root, 'a')));
    expect(straight.step).toBe(4);
    const wa = weights(straight.model);
    const metricsA = readMetrics(join(root, 'a', 'metrics.jsonl'));
    expect(metricsA.map((m) => m.step)).toEqual([1, 2, 3, 4]);
    expect(metricsA[0]?.['train/lr']).toBeCloseTo(5e-3, 12); // warmup 1: step 0 at the peak
    expect(typeof metricsA[0]?.['losses/policy']).toBe('number');
    expect(metricsA[0]?.['rollout/policy_calls']).toBe(8);
    expect((await listCheckpoints(join(root, 'a'))).map((c) => c.step)).toEqual([2, 4]);
    expect(readdirSync(join(root, 'a', 'checkpoints', 'step-00000004')).sort()).toEqual([
      'config.json',
      'model.safetensors',
      'optimizer.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
      'trainer_state.json',
    ]);
    expect(existsSync(join(root, 'a', 'tb'))).toBe(true);
    straight.model.dispose();

    // Interrupted after step 2 (the SIGINT path), then resumed in a fresh runGrpo.
    const stop = { requested: false };
    const first = await runGrpo(options(join(root, 'b'), { stop, onStep: (s) => (stop.requested = s === 2) }));
    expect([first.step, first.stopped]).toEqual([2, true]);
    first.model.dispose();
    const resumed = await runGrpo(options(join(root, 'b')));
    expect([resumed.step, resumed.resumedFrom]).toEqual([4, 2]);
    expect(maxDiff(wa, weights(resumed.model))).toBeLessThan(1e-6);
    expect(readMetrics(join(root, 'b', 'metrics.jsonl')).map((m) => m.step)).toEqual([1, 2, 3, 4]);
    resumed.model.dispose();

    // A crash during step 4 (after the step-2 checkpoint and step 3's metrics): resume redoes 3 and 4.
    let calls = 0;
    const crashing = (items: readonly Episode[], model: CausalLM, rng: Rng) => {
      calls += 1;
      if (calls === 4) throw new Error('simulated crash');
      return rolloutOf(items, model, rng);
    };
    await expect(runGrpo(options(join(root, 'c'), { stages: stagesOf(crashing) }))).rejects.toThrow('simulated crash');
    expect(readMetrics(join(root, 'c', 'metrics.jsonl')).map((m) => m.step)).toEqual([1, 2, 3]);
    const after = await runGrpo(options(join(root, 'c')));
    expect(after.resumedFrom).toBe(2);
    expect(maxDiff(wa, weights(after.model))).toBeLessThan(1e-6);
    expect(readMetrics(join(root, 'c', 'metrics.jsonl')).map((m) => m.step)).toEqual([1, 2, 3, 4]);
    after.model.dispose();
    expect(tf.memory().numTensors).toBe(t0); // five runs, a crash included, leave nothing behind
  });

  it('refuses to resume under another config', async () => {
    const dir = join(root, 'a'); // has checkpoints from the test above
    const other = configSchema.parse({ train: { ...config.train, lr: 1e-3 } });
    const before = tf.memory().numTensors;
    await expect(runGrpo(options(dir, { fullConfig: other }))).rejects.toThrow('was written under another config');
    expect(tf.memory().numTensors).toBe(before); // nothing was loaded or allocated
  });
});
