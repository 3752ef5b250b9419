import { afterAll, describe, expect, it } from 'vitest';
import { creditSection } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { requestMeta, rollout } from '../rollout/engine.ts';
import { PROTOCOLS } from '../rollout/protocol/index.ts';
import { ScriptedPolicy, type ScriptFn } from '../rollout/scripted/policy.ts';
import type { Trajectory } from '../rollout/types.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { computeCredits } from './compute.ts';
import { engineReplayRunner, replaySettings } from './engine-adapters.ts';

/**
 * The `repair` counterfactual and the `oracle` ceiling on scripted trajectories through the real
 * engine. The planner delegates three lookups (hop 1, hop 2, hop 1 again) and answers
 * "<report 0> and <report 1>", or "unknown" when any report is missing (the placeholder): it needs
 * every report to be there, and the first two to be right. Gold: "Alin Marek and 1950".
 * Every value below is computed by hand from that rule (replays are deterministic: one per value).
 */
afterAll(async () => {
  await closeCodeSandbox();
});

const episode: Episode = { ...handEpisode(), answers: ['Alin Marek and 1950'] };
const HOP1 = 'Who founded Zorvex?';
const HOP2 = 'In which year was Alin Marek born?';

function game(delegations: string[], reports: Record<string, string>): ScriptFn {
  return (req) => {
    const m = requestMeta(req);
    const p = PROTOCOLS[m.protocol];
    if (m.role === 'planner') {
      if (m.results.length < delegations.length)
        return p.formatCall('delegate', delegations[m.results.length] as string);
      const r = m.results.map((x) => x.output);
      return p.formatAnswer(r.some((x) => x === '[no report]') ? 'unknown' : `${r[0]} and ${r[1]}`);
    }
    if (m.turn === 0) return p.formatCall('search', m.subtask ?? '');
    // A worker asked the gold sub-question answers it right (the repaired delegation's worker).
    return p.formatAnswer(reports[m.subtask ?? ''] ?? (m.subtask === HOP1 ? 'Alin Marek' : 'nothing'));
  };
}

const cfg = rolloutConfig({ maxContext: 100_000, maxDelegations: 3 });

async function recorded(
  delegations: string[],
  reports: Record<string, string>,
): Promise<{ traj: Trajectory; policy: ScriptedPolicy }> {
  const policy = new ScriptedPolicy(game(delegations, reports));
  const { trajectories } = await rollout(policy, [episode], { cfg, groupSize: 1 });
  return { traj: trajectories[0] as Trajectory, policy };
}

async function credit(t: { traj: Trajectory; policy: ScriptedPolicy }, over: Record<string, unknown>) {
  const c = creditSection.parse({ replays: 1, ...over });
  return computeCredits([t.traj], episode, engineReplayRunner(t.policy, { cfg }, replaySettings(c, 5)), c);
}

describe('credit.counterfactual: repair', () => {
  for (const replayMode of ['final', 'replan'] as const) {
    it(`a wrong report that sank a failure: Delta -1 under repair, 0 under mask; right reports 0 [${replayMode}]`, async () => {
      // Reports: Alin Marek (right), 1951 (wrong), Alin Marek (right) -> "Alin Marek and 1951": failure.
      const t = await recorded([HOP1, HOP2, HOP1], { [HOP1]: 'Alin Marek', [HOP2]: '1951' });
      expect(t.traj.finalAnswer).toBe('Alin Marek and 1951');
      // mask: any mask gives "unknown", still a failure: v(N) = v(N \ m) = 0 for every m.
      expect((await credit(t, { method: 'loo', counterfactual: 'mask', replayMode })).trajectories[0]?.deltas).toEqual([
        0, 0, 0,
      ]);
      // repair: worker 1 given "1950" -> success: Delta_1 = 0 - 1; workers 0 and 2 repaired to the same report: 0.
      const r = await credit(t, { method: 'loo', counterfactual: 'repair', replayMode });
      expect(r.trajectories[0]?.deltas).toEqual([0, -1, 0]);
      expect(r.trajectories[0]?.plannerRepairs).toBeUndefined(); // every delegation asked its hop right
      // Shapley with workers outside S repaired: v(S) = 1 iff worker 1 is outside S, so phi = [0, -1, 0] (efficiency:
      // v(N) - v(empty) = -1).
      const sh = await credit(t, { method: 'shapley', counterfactual: 'repair', replayMode });
      expect(sh.trajectories[0]?.phi?.map((x) => x + 0)).toEqual([0, -1, 0]);
    });
  }

  it('a wrong report in a success that did not matter: 0 under repair, +1 under mask', async () => {
    // Reports: Alin Marek, 1950, Bob (wrong, but only its presence counts) -> success.
    const t = await recorded([HOP1, HOP2, HOP1], { [HOP1]: 'Alin Marek', [HOP2]: '1950' });
    const t2 = await recorded([HOP1, HOP2, `${HOP1} `], { [HOP1]: 'Alin Marek', [HOP2]: '1950', [`${HOP1} `]: 'Bob' });
    expect([t.traj.finalAnswer, t2.traj.finalAnswer]).toEqual(['Alin Marek and 1950', 'Alin Marek and 1950']);
    // mask: every report is needed: Delta = 1 - 0 for each.
    expect((await credit(t2, { method: 'loo', counterfactual: 'mask' })).trajectories[0]?.deltas).toEqual([1, 1, 1]);
    // repair: worker 2's "Bob" becomes "Alin Marek": still a success, Delta 0; the right ones 0.
    const r = await credit(t2, { method: 'loo', counterfactual: 'repair' });
    expect(r.trajectories[0]?.deltas).toEqual([0, 0, 0]);
    // Planner: mean max(Delta, 0) = 0 under repair, 1 under mask.
    expect(r.trajectories[0]?.plannerMarginal).toBe(0);
  });

  it('a wrong delegation blames the planner: its repaired subtask would have saved the team', async () => {
    // The planner asks about Qwerty instead of Zorvex (wrong entity); the worker answers Bob -> "Bob and 1950":
    // failure.
    const t = await recorded(['Who founded Qwerty?', HOP2, HOP1], {
      'Who founded Qwerty?': 'Bob',
      [HOP2]: '1950',
      [HOP1]: 'Alin Marek',
    });
    expect(t.traj.finalAnswer).toBe('Bob and 1950');
    const r = await credit(t, { method: 'loo', counterfactual: 'repair' });
    const tc = r.trajectories[0];
    // Delegation 0 replayed with "Who founded Zorvex?": its worker says Alin Marek -> success; blame 0 - 1 = -1.
    expect(tc?.plannerRepairs).toEqual([[0, -1]]);
    // Worker 0's "Bob" is not its hop's answer either: repaired to Alin Marek -> success, Delta_0 = -1.
    expect(tc?.deltas).toEqual([-1, 0, 0]);
    // Planner marginal: mean max(Delta, 0) = 0, plus the mean blame of its wrong delegations, -1.
    expect(tc?.plannerMarginal).toBe(-1);
    const planner = r.credits.find((c) => c.role === 'planner');
    // SHARP weights 0.9 / 0.9 / 0.1: 0.9 * 0 + 0.9 * -1 + 0.1 * 1 (every call valid).
    expect(planner?.total).toBeCloseTo(-0.8, 12);
    // credit.repairPlanner false: no repaired subtask is replayed and the planner keeps SHARP's credit alone.
    const w = await credit(t, { method: 'loo', counterfactual: 'repair', repairPlanner: false });
    const wc = w.trajectories[0];
    expect([wc?.plannerRepairs, wc?.deltas, wc?.plannerMarginal]).toEqual([undefined, [-1, 0, 0], 0]);
    expect(w.stats.replayItems).toBeLessThan(r.stats.replayItems);
    // 0.9 * 0 + 0.9 * 0 + 0.1 * 1.
    expect(w.credits.find((c) => c.role === 'planner')?.total).toBeCloseTo(0.1, 12);
  });

  it('needs a gold decomposition: one line naming the episode', async () => {
    const t = await recorded([HOP1, HOP2, HOP1], { [HOP1]: 'Alin Marek', [HOP2]: '1950' });
    const bare = { ...episode, decomposition: undefined };
    const c = creditSection.parse({ method: 'loo', counterfactual: 'repair' });
    await expect(
      computeCredits([t.traj], bare, engineReplayRunner(t.policy, { cfg }, replaySettings(c, 5)), c),
    ).rejects.toThrow(
      /^credit.counterfactual=repair needs a gold decomposition \(question_decomposition\), and episode hand1 has none/,
    );
  });
});

describe('credit.method: oracle', () => {
  it("workers get 1 for their hop's gold answer, 0 otherwise; the planner the outcome; no replays", async () => {
    const t = await recorded([HOP1, HOP2, HOP1], { [HOP1]: 'Alin Marek', [HOP2]: '1951' });
    const r = await credit(t, { method: 'oracle' });
    expect(r.stats.replayItems).toBe(0);
    expect(r.credits.map((c) => [c.role, c.total])).toEqual([
      ['planner', 0],
      ['worker', 1],
      ['worker', 0],
      ['worker', 1],
    ]);
  });
});
