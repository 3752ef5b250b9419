import { afterAll, describe, expect, it } from 'vitest';
import { creditSection } from '../config/sections/credit.ts';
import { Rng } from '../random/rng.ts';
import { requestMeta, rollout } from '../rollout/engine.ts';
import { PROTOCOLS } from '../rollout/protocol/index.ts';
import { ScriptedPolicy, type ScriptFn } from '../rollout/scripted/policy.ts';
import type { Trajectory } from '../rollout/types.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { computeCredits } from './compute.ts';
import { engineReplayRunner } from './engine-adapters.ts';

/**
 * The `resample` counterfactual on a scripted game through the real engine: the planner delegates
 * two lookups and answers right only when both reports are right. Worker 0 always reports right;
 * worker 1 reports wrong with probability p (a coin from its own sampling stream). In a failure
 * that worker 1 caused, masking gives every worker Delta = 0 (any mask still fails), while
 * resampling worker 1 succeeds with probability 1 - p: Delta_1 = v(N) - (1 - p) = -(1 - p).
 */
afterAll(async () => {
  await closeCodeSandbox();
});

const P = 0.25;
const episode = { ...handEpisode(), answers: ['Alin Marek and 1950'] };
const SUBTASKS = ['Who founded Zorvex?', 'In which year was Alin Marek born?'];
const RIGHT = ['Alin Marek', '1950'];

function game(shared: Rng): ScriptFn {
  return (req) => {
    const m = requestMeta(req);
    const p = PROTOCOLS[m.protocol];
    if (m.role === 'planner') {
      if (m.results.length < 2) return p.formatCall('delegate', SUBTASKS[m.results.length] as string);
      return p.formatAnswer(m.results.map((r) => r.output).join(' and '));
    }
    if (m.turn === 0) return p.formatCall('search', m.subtask ?? '');
    const k = SUBTASKS.indexOf(m.subtask ?? '');
    const u = req.seed === undefined ? shared.float() : new Rng(req.seed).float();
    return p.formatAnswer(k === 1 && u < P ? '1951' : (RIGHT[k] as string));
  };
}

describe('credit.counterfactual: resample', () => {
  const cfg = rolloutConfig({ maxContext: 100_000 });

  for (const mode of ['final', 'replan'] as const)
    it(
      `gives the worker that caused a failure -(1 - p), where masking gives 0; the other worker 0 (LOO and ` +
        `Shapley) [${mode}]`,
      async () => {
        const policy = new ScriptedPolicy(game(new Rng(3)));
        const { trajectories } = await rollout(policy, [episode], { cfg, groupSize: 16 });
        const failed = trajectories.find((t) => t.finalAnswer === 'Alin Marek and 1951') as Trajectory;
        expect(failed).toBeDefined();
        const n = 2000;
        const run = (counterfactual: 'mask' | 'resample', method: 'loo' | 'shapley') => {
          // More replays than a run may ask (credit.replays <= 64): the test estimates a probability to 1e-2.
          const c = { ...creditSection.parse({ method, counterfactual }), replays: n };
          return computeCredits(
            [failed],
            episode,
            engineReplayRunner(
              policy,
              { cfg },
              { replayMode: mode, placeholder: c.placeholder, streamSeed: 5, counterfactual },
            ),
            c,
          );
        };
        const masked = await run('mask', 'loo');
        expect(masked.trajectories[0]?.deltas).toEqual([0, 0]);
        const res = await run('resample', 'loo');
        const [d0, d1] = res.trajectories[0]?.deltas ?? [];
        expect(d0).toBe(0); // worker 0 resampled still reports right: the trajectory still fails
        // -(1 - p) = -0.75; binomial standard error sqrt(p (1 - p) / n) = 0.0097: within 4 of them
        expect(Math.abs((d1 as number) + (1 - P))).toBeLessThan(4 * Math.sqrt((P * (1 - P)) / n));
        expect(res.report.harmful).toBe(0.5);
        // Shapley over "kept" coalitions: v(N) = 0, v({0}) = 1 - p (worker 1 resampled), v({1}) = 0, v({}) = 1 - p
        // phi_0 = ((v{0} - v{}) + (v{0,1} - v{1})) / 2 = 0; phi_1 = ((v{1} - v{}) + (v{0,1} - v{0})) / 2 = -(1 - p)
        const sh = await run('resample', 'shapley');
        const [phi0, phi1] = sh.trajectories[0]?.phi ?? [];
        // common random numbers: v({0}) and v({}) resample worker 1 with the same coins
        expect(phi0).toBeCloseTo(0, 12);
        expect(Math.abs((phi1 as number) + (1 - P))).toBeLessThan(4 * Math.sqrt((P * (1 - P)) / n));
      },
    );

  it('in a success, resampling a worker that is always right changes nothing: Delta 0', async () => {
    const policy = new ScriptedPolicy(game(new Rng(3)));
    const { trajectories } = await rollout(policy, [episode], { cfg, groupSize: 16 });
    const solved = trajectories.find((t) => t.finalAnswer === 'Alin Marek and 1950') as Trajectory;
    const c = { ...creditSection.parse({ method: 'loo', counterfactual: 'resample' }), replays: 400 };
    const r = await computeCredits(
      [solved],
      episode,
      engineReplayRunner(
        policy,
        { cfg },
        { replayMode: 'final', placeholder: c.placeholder, streamSeed: 5, counterfactual: 'resample' },
      ),
      c,
    );
    const [d0, d1] = r.trajectories[0]?.deltas ?? [];
    expect(d0).toBe(0);
    // worker 1 resampled fails with probability p: Delta_1 = 1 - (1 - p) = p
    expect(Math.abs((d1 as number) - P)).toBeLessThan(4 * Math.sqrt((P * (1 - P)) / 400));
  });
});
