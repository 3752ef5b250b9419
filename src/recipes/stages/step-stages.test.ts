import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { configSchema } from '../../config/schema.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../../tokenizer/fit.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { handEpisode } from '../../../test/rollout-fixtures.ts';
import { closeCodeSandbox } from '../../tools/code.ts';
import { inProcessStages } from './step-stages.ts';
import { runGrpo } from '../../train/grpo/loop.ts';
import { readMetrics } from '../../train/metrics/jsonl.ts';
import { listStepRecords, readStepRecord } from '../../credit/record.ts';

let root: string;
let tok: Tokenizer;
beforeAll(async () => {
  await initBackend('wasm');
  root = await mkdtemp(join(tmpdir(), 'sharp-collect-'));
  const ep = handEpisode();
  const corpus = [
    ep.question,
    ...ep.paragraphs.map((p) => p.text),
    '<delegate>x</delegate><search>y</search><answer>z</answer><result>r</result>',
  ];
  await writeTokenizerFiles(join(root, 'tok'), fitBpeTokenizer(corpus, 320));
  tok = await Tokenizer.load(join(root, 'tok'));
});
afterAll(async () => {
  await closeCodeSandbox();
  await rm(root, { recursive: true, force: true });
});

describe('inProcessStages + runGrpo (real engine, LM policy, credit)', () => {
  // A random-init model emits no valid tool call or answer, so every reward is 0 and both groups are
  // skipped (no update): this test checks the wiring of the real stages; loop.test.ts covers updates.
  it('runs rollouts -> credit -> advantages -> (skipped) update -> metrics -> checkpoint end to end', async () => {
    const config = configSchema.parse({
      rollout: {
        groupSize: 2,
        maxNewTokens: 8,
        maxPlannerTurns: 2,
        maxDelegations: 1,
        maxWorkerTurns: 1,
        maxContext: 512,
      },
      train: { steps: 2, batchQuestions: 2, lr: 1e-3, checkpointEvery: 1, microBatch: 8 },
    });
    const stages = inProcessStages({ tokenizer: tok, rollout: config.rollout, credit: config.credit });
    const t0 = tf.memory().numTensors;
    const res = await runGrpo({
      runDir: join(root, 'run'),
      train: config.train,
      seed: 3,
      fullConfig: config,
      initialModel: async () =>
        CausalLM.random(
          hfConfigFor({
            arch: 'qwen3',
            layers: 2,
            hidden: 64,
            heads: 4,
            kvHeads: 2,
            intermediate: 96,
            vocab: tok.vocabSize,
          }),
          1,
        ),
      data: [handEpisode('h1'), handEpisode('h2'), handEpisode('h3')],
      stages,
      credit: config.credit,
      enc: tok,
      padId: tok.padId,
      maxTokens: config.rollout.maxContext,
      progress: false,
    });
    expect(res.step).toBe(2);
    res.model.dispose();
    expect(tf.memory().numTensors).toBe(t0);
    const m = readMetrics(join(root, 'run', 'metrics.jsonl'));
    expect(m).toHaveLength(2);
    const first = m[0] as Record<string, unknown>;
    // B = 2 questions x G = 2 trajectories; the credit report and reward parts are logged.
    expect(first['rollout/trajectories']).toBe(4);
    expect(first['groups/total']).toBe(2);
    expect(typeof first['reward/planner']).toBe('number');
    expect(typeof first['credit/worker_calls']).toBe('number');
    expect(first.accuracy).toBe(0);
    expect(first['groups/skipped']).toBe(2); // all-zero rewards carry no signal
    expect(first['losses/policy']).toBeUndefined(); // so no update ran
    expect(first['rollout/generated_tokens']).toBeGreaterThan(0);
    // Each step's trajectories with their credit for `sharp view`: credit.recordGroups (2) = every group here.
    const files = listStepRecords(join(root, 'run'));
    expect(files.map((f) => f.split('/').at(-1))).toEqual(['step-000001.json', 'step-000002.json']);
    const rec = readStepRecord(files[0] as string);
    expect(rec).toMatchObject({
      kind: 'train',
      step: 1,
      groupsTotal: 2,
      credit: { method: 'loo', replayMode: 'final' },
    });
    expect(rec.groups.flatMap((g) => g.trajectories)).toHaveLength(4);
    // The invalid-call rate is over the same tool calls the record holds.
    const calls = rec.groups.flatMap((g) => g.trajectories.flatMap((t) => t.messages.flatMap((x) => x.toolCalls)));
    expect(first['rollout/invalid_calls']).toBe(
      calls.length === 0 ? 0 : calls.filter((c) => !c.valid).length / calls.length,
    );
  });
});
