import { afterAll, describe, expect, it } from 'vitest';
import { creditSection } from '../config/sections/credit.ts';
import { Rng } from '../random/rng.ts';
import { requestMeta, rollout } from '../rollout/engine.ts';
import { PROTOCOLS } from '../rollout/protocol/index.ts';
import { ScriptedPolicy, type ScriptFn } from '../rollout/scripted/policy.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { computeCredits } from './compute.ts';
import { engineReplayRunner } from './engine-adapters.ts';

/**
 * Common random numbers in the counterfactual replays, through the real engine and replay API. The
 * planner here never reads its reports: it delegates three fixed subtasks and then answers right
 * or wrong by a coin flip from its request's sampling stream. No worker can matter, so every Delta
 * and every phi must be exactly 0; that holds only if every coalition of a trajectory (N included)
 * draws the same coin in its replay r. Without the streams (one shared generator, as before) the
 * coins differ between coalitions and the credit is noise.
 */
afterAll(async () => {
  await closeCodeSandbox();
});

const episode = handEpisode();
const cfg = rolloutConfig({ maxContext: 100_000, maxDelegations: 3, maxPlannerTurns: 5 });
const SUBTASKS = ['Who founded Zorvex?', 'In which year was Alin Marek born?', 'Where is Kelvar?'];

/** The coin: from the request's own stream when it has one, else from one shared generator. */
function coinPlanner(shared: Rng): ScriptFn {
  return (req) => {
    const m = requestMeta(req);
    const p = PROTOCOLS[m.protocol];
    if (m.role === 'worker')
      return m.turn === 0 ? p.formatCall('search', m.subtask ?? '') : p.formatAnswer('something');
    if (m.turn < SUBTASKS.length) return p.formatCall('delegate', SUBTASKS[m.turn] as string);
    const u = req.seed === undefined ? shared.float() : new Rng(req.seed).float();
    return p.formatAnswer(u < 0.5 ? '1950' : '1951');
  };
}

describe('counterfactual replays under common random numbers', () => {
  for (const mode of ['final', 'replan'] as const) {
    it(
      `a planner that ignores its reports gets Delta = phi = 0 exactly, v(N) from replays (noise from the coin) ` +
        `[${mode}]`,
      async () => {
        const policy = new ScriptedPolicy(coinPlanner(new Rng(1)));
        const { trajectories } = await rollout(policy, [episode], { cfg, groupSize: 6 });
        expect(trajectories.every((t) => t.agents.length === 4)).toBe(true);
        const loo = creditSection.parse({ method: 'loo', replayMode: mode, replays: 4 });
        const shapley = creditSection.parse({ method: 'shapley', replayMode: mode, replays: 4 });
        const runner = engineReplayRunner(
          policy,
          { cfg },
          { replayMode: mode, placeholder: loo.placeholder, streamSeed: 42 },
        );
        const l = await computeCredits(trajectories, episode, runner, loo);
        const s = await computeCredits(trajectories, episode, runner, shapley);
        for (const t of l.trajectories) expect(t.deltas).toEqual([0, 0, 0]);
        for (const t of s.trajectories) expect(t.phi).toEqual([0, 0, 0]);
        expect(l.report).toMatchObject({ helpful: 0, harmful: 0, neutral: 1 });
        // v(N) is a mean over 4 coins, not the recorded coin: it moves with the streams, and so does the noise floor
        const vN = l.trajectories.map((t) => new Map(t.values).get(0b111) as number);
        expect(vN.some((v) => v > 0 && v < 1)).toBe(true);
        expect(l.report.noiseFloor).toBeGreaterThan(0);
        // The control: a stream of its own for every replayed item (what one shared generator amounts to) gives every
        // coalition its own coins.
        const noisy = engineReplayRunner(
          policy,
          { cfg },
          { replayMode: mode, placeholder: loo.placeholder, streamSeed: 42 },
        );
        const unseeded: typeof noisy = (items) => noisy(items.map((it, i) => ({ ...it, replica: 1000 + i })));
        const c = await computeCredits(trajectories, episode, unseeded, loo);
        expect(c.trajectories.flatMap((t) => t.deltas).some((d) => d !== 0)).toBe(true);
      },
    );
  }
});
