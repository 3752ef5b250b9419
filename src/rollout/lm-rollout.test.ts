import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { generateSynth } from '../data/synth/generate.ts';
import { toEpisode } from '../data/synth/record.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { rollout } from './engine.ts';
import { getProtocol } from './protocol/index.ts';
import { agentContext } from './record.ts';
import { replay } from './replay.ts';
import { rolloutConfig } from '../../test/rollout-fixtures.ts';
import { createTinyLm, type TinyLm } from '../../test/tiny-lm.ts';
import type { Trajectory } from './types.ts';
import { renderPromptIds } from '../tokenizer/chat-prompt.ts';
import type { Policy } from './policy.ts';
import { expertText } from './scripted/expert.ts';

let lm: TinyLm;
beforeAll(async () => {
  await initBackend('wasm');
  lm = await createTinyLm({ seed: 5 });
});
afterAll(async () => {
  await lm.dispose();
  await closeCodeSandbox();
});

const episodes = generateSynth({ seed: 12, n: 4 }).map(toEpisode);
// Short prompts, short turns and few of them keep the test quick on wasm (each step prefills every
// agent's whole context; the default prompts are ~300 tokens with this tokenizer).
const cfg = rolloutConfig({
  plannerPrompt: 'Plan.',
  workerPrompt: 'Work.',
  maxNewTokens: 12,
  maxContext: 384,
  maxPlannerTurns: 3,
  maxWorkerTurns: 2,
  code: { timeoutMs: 200 },
});

/** Strips logprobs so the rest of two trajectories can be compared exactly. */
const withoutLogprobs = (t: Trajectory): Trajectory => ({
  ...t,
  messages: t.messages.map((m) => ({ ...m, logprobs: [] })),
});

describe('rollouts of a random-init tiny LM (real LmPolicy)', () => {
  it('24 garbage trajectories run without a crash; every message is recorded and classified', async () => {
    const protocol = getProtocol(cfg.protocol);
    const before = tf.memory().numTensors;
    const t0 = Date.now();
    const { trajectories, stats } = await rollout(
      lm.policy({ seed: 1, maxContext: cfg.maxContext }),
      episodes.slice(0, 3),
      { cfg, groupSize: 8 },
    );
    console.log(`tiny LM rollout: ${Date.now() - t0} ms`, stats);
    expect(tf.memory().numTensors).toBe(before);
    expect(trajectories).toHaveLength(24);
    expect(stats.maxBatch).toBe(24);
    let invalid = 0;
    for (const t of trajectories) {
      for (const m of t.messages.filter((x) => x.chatRole === 'assistant')) {
        expect(m.tokenIds.length).toBe(m.logprobs.length);
        expect(m.tokenIds.length).toBeGreaterThan(0);
        expect(m.logprobs.every((lp) => lp <= 0 && Number.isFinite(lp))).toBe(true);
        const p = protocol.parse(m.text);
        if (p.kind === 'invalid') {
          invalid++;
          expect(m.toolCalls[0]?.valid).toBe(false);
          expect(m.toolCalls[0]?.error).toBe(p.error);
        }
        // the trainer re-renders this context: the prompt ids the policy saw
        expect(renderPromptIds(lm.tokenizer, agentContext(t, m.agent, m.index)).length).toBeLessThan(cfg.maxContext);
      }
    }
    expect(invalid).toBeGreaterThan(0);
  });

  // At full size: 1,000 trajectories of the random-init model with the default
  // prompts and limits. Minutes on 2 shared cores, so opt-in: SHARP_LONG=1 npx vitest run <this file>.
  it.skipIf(!process.env['SHARP_LONG'])(
    '1,000 garbage trajectories with the default config (SHARP_LONG=1)',
    { timeout: 3_600_000 },
    async () => {
      const protocol = getProtocol('tags');
      const full = rolloutConfig({ code: { timeoutMs: 200 } });
      const many = generateSynth({ seed: 13, n: 100 }).map(toEpisode);
      const policy = lm.policy({ seed: 9, maxContext: full.maxContext });
      const before = tf.memory().numTensors;
      let count = 0;
      let invalid = 0;
      const reasons = new Map<string, number>();
      // 10 engine runs of 10 episodes x G=10 (each step one batch of up to 100 agents, to bound memory)
      for (let i = 0; i < 100; i += 10) {
        const { trajectories } = await rollout(policy, many.slice(i, i + 10), { cfg: full, groupSize: 10 });
        count += trajectories.length;
        for (const t of trajectories) {
          for (const a of t.agents) reasons.set(a.endReason, (reasons.get(a.endReason) ?? 0) + 1);
          for (const m of t.messages.filter((x) => x.chatRole === 'assistant')) {
            const p = protocol.parse(m.text);
            if (p.kind === 'invalid') {
              invalid++;
              expect(m.toolCalls[0]?.valid).toBe(false);
              expect(m.toolCalls[0]?.error).toBe(p.error);
            }
          }
        }
      }
      console.log(
        `1,000 LM trajectories: ${invalid} invalid calls recorded; end reasons ` +
          `${JSON.stringify(Object.fromEntries(reasons))}`,
      );
      expect(count).toBe(1000);
      expect(tf.memory().numTensors).toBe(before);
    },
  );

  it('replays a multi-agent LM trajectory with its recorded tokens exactly (expert text forced through the LM)', async () => {
    // The LM is made to write the expert's messages (their token ids forced), so the trajectory has
    // delegations, workers and tool calls, with real token ids and the LM's logprobs.
    const base = lm.policy({ seed: 3, maxContext: 4096 });
    const forcedExpert: Policy = {
      generate: (reqs) =>
        base.generate(
          reqs.map((r) => ({ ...r, forcedTokens: lm.tokenizer.encode(expertText(r), { addSpecialTokens: false }) })),
        ),
    };
    const big = rolloutConfig({ plannerPrompt: 'Plan.', workerPrompt: 'Work.', maxContext: 4096, maxNewTokens: 64 });
    const { trajectories } = await rollout(forcedExpert, episodes.slice(0, 2), { cfg: big, groupSize: 1 });
    expect(trajectories.map((t) => t.finalAnswer)).toEqual(episodes.slice(0, 2).map((e) => e.answers[0]));
    expect(trajectories.every((t) => t.agents.length >= 3)).toBe(true);
    const again = await replay(
      lm.policy({ seed: 99, maxContext: 4096 }),
      trajectories.map((traj, i) => ({ traj, episode: episodes[i] as (typeof episodes)[number], masked: [] })),
      {
        cfg: big,
        mode: 'exact',
        placeholder: '[no report]',
      },
    );
    expect(again.map(withoutLogprobs)).toEqual(trajectories.map(withoutLogprobs));
    let worst = 0;
    again.forEach((t, i) =>
      t.messages.forEach((m, j) =>
        m.logprobs.forEach(
          (lp, k) => (worst = Math.max(worst, Math.abs(lp - (trajectories[i]?.messages[j]?.logprobs[k] as number)))),
        ),
      ),
    );
    expect(worst).toBeLessThan(1e-4);
  });

  it('replaying sampled trajectories with the recorded tokens reproduces them exactly', async () => {
    const { trajectories } = await rollout(lm.policy({ seed: 2, maxContext: cfg.maxContext }), episodes.slice(0, 2), {
      cfg,
      groupSize: 3,
    });
    // a different sampling seed: only forcing can make the replay agree
    const again = await replay(
      lm.policy({ seed: 777, maxContext: cfg.maxContext }),
      trajectories.map((traj, i) => ({
        traj,
        episode: episodes[Math.floor(i / 3)] as (typeof episodes)[number],
        masked: [],
      })),
      {
        cfg,
        mode: 'exact',
        placeholder: '[no report]',
      },
    );
    expect(again.map(withoutLogprobs)).toEqual(trajectories.map(withoutLogprobs));
    let worst = 0;
    again.forEach((t, i) =>
      t.messages.forEach((m, j) =>
        m.logprobs.forEach(
          (lp, k) => (worst = Math.max(worst, Math.abs(lp - (trajectories[i]?.messages[j]?.logprobs[k] as number)))),
        ),
      ),
    );
    expect(worst).toBeLessThan(1e-4);
  });
});
