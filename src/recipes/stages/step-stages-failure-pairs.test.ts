import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { enableNativeKernels } from '../../backend/native/index.ts';
import { loadConfig } from '../../config/load.ts';
import { normalizeAnswer } from '../../data/answers/squad.ts';
import { generateSynth } from '../../data/synth/generate.ts';
import { toEpisode } from '../../data/synth/record.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { agentContext } from '../../rollout/record.ts';
import { Rng } from '../../random/rng.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { closeCodeSandbox } from '../../tools/code.ts';
import { inProcessStages } from './step-stages.ts';
import { runStepStages } from '../../../test/step-stages.ts';
import { buildRlBatch } from '../../train/grpo/advantages.ts';

/**
 * credit.failurePairs in the trainer's collect: the rule judge, the engine's agent context and a
 * resampler over the step's policy are built from the config, so failed trajectories of the shipped
 * starting policy yield DPO pairs whose chosen side is the gold answer of the erring worker's hop;
 * with credit.messageLevel the shares reach the trainer's sequences as per-token advantages.
 */
const REPO = resolve(import.meta.dirname, '../../..');
const MODEL = join(REPO, 'models/sharp-tiny-sft');

beforeAll(async () => {
  await initBackend('wasm');
  if (process.env.SHARP_NATIVE !== '0') enableNativeKernels();
});
afterAll(async () => {
  await closeCodeSandbox();
});

describe.skipIf(!existsSync(join(MODEL, 'config.json')))(
  'the in-process stages with credit.failurePairs and credit.messageLevel',
  () => {
    it('localises first errors and pairs them with accepted resamples', async () => {
      const cfg = loadConfig({
        file: join(REPO, 'configs/quickstart.yaml'),
        sets: ['credit.failurePairs=true', 'credit.failureResamples=4', 'credit.messageLevel=true'],
      });
      const s = cfg.data.synthetic;
      // The quickstart's first 12 training episodes (its data section).
      const train = generateSynth({
        seed: s.seed,
        n: 12,
        minHops: s.minHops,
        maxHops: s.maxHops,
        world: s.world,
        worlds: 'fresh',
        namePool: s.namePool,
        names: 'train',
      }).map(toEpisode);
      const tokenizer = await Tokenizer.load(MODEL);
      const model = await CausalLM.load(MODEL);
      try {
        const out = await runStepStages(
          inProcessStages({ tokenizer, rollout: cfg.rollout, credit: cfg.credit }),
          cfg.credit,
          train.slice(4, 12),
          model,
          new Rng(0),
        );
        const trajectories = out.groups.flatMap((g) => g.trajectories.map((ct) => ct.trajectory));
        const byId = new Map(trajectories.map((t) => [t.id, t]));
        const episodes = new Map(train.map((e) => [e.id, e]));
        const pairs = out.pairs ?? [];
        // Every failure of the recorded groups had its first error localised (a worker's report or
        // the planner's answer: the rule judge's judged messages).
        const recorded = (out.record?.groups ?? []).flatMap((g) => g.trajectories);
        expect(recorded.length).toBeGreaterThan(0);
        for (const t of recorded) if (t.success === 0) expect(t.firstError?.judgeCalls ?? 0).toBeGreaterThan(0);
        expect(pairs.length).toBeGreaterThan(0);
        for (const p of pairs) {
          const traj = byId.get(p.metadata.trajectoryId);
          const ep = episodes.get(p.metadata.episodeId);
          if (!traj || !ep) throw new Error(`pair of unknown trajectory ${p.metadata.trajectoryId}`);
          const success = out.groups.flatMap((g) => g.trajectories).find((ct) => ct.trajectory.id === traj.id)
            ?.agents[0]?.parts.broadcast;
          expect(success).toBe(0); // pairs come from failures only
          const msg = traj.messages[p.metadata.messageIndex];
          expect(p.rejected).toBe(msg.text);
          expect(p.chosen).not.toBe(p.rejected);
          expect(p.prefix).toEqual(agentContext(traj, msg.agent, msg.index));
          if (p.metadata.role === 'worker') {
            // The accepted alternative answers the worker's hop with its gold answer.
            const worker = traj.agents[p.metadata.agent];
            const hop = (ep.decomposition ?? []).find(
              (h, k, all) =>
                normalizeAnswer(h.question.replace(/#(\d+)/g, (_, j: string) => all[Number(j) - 1]?.answer ?? '')) ===
                normalizeAnswer(worker.subtask ?? ''),
            );
            if (hop) expect(p.chosen).toContain(hop.answer);
          }
          expect(p.metadata.attempts).toBeGreaterThanOrEqual(1);
          expect(p.metadata.attempts).toBeLessThanOrEqual(4);
        }
        // credit.messageLevel: every generated message has a share, an agent's shares sum to its credit,
        // and the trainer's sequences carry them as per-token advantages.
        for (const ct of out.groups.flatMap((g) => g.trajectories)) {
          const shares = ct.messages ?? [];
          const t = ct.trajectory;
          const generated = t.messages.filter((m) => m.chatRole === 'assistant').map((m) => `${t.id}/${m.index}`);
          expect(shares.map((m) => `${m.trajectoryId}/${m.messageIndex}`).sort()).toEqual(generated.sort());
          for (const c of ct.agents) {
            expect(c.trajectoryId).toBe(t.id);
            const sum = shares.filter((m) => m.agent === c.agent).reduce((a, m) => a + m.reward, 0);
            expect(sum).toBeCloseTo(c.total, 9);
          }
        }
        const batch = buildRlBatch(out.groups, tokenizer, cfg.train.advEps);
        expect(batch.sequences.length).toBeGreaterThan(0);
        for (const seq of batch.sequences) expect(seq.tokenAdv?.length).toBe(seq.ids.length);
      } finally {
        model.dispose();
      }
    }, 300_000);
  },
);
