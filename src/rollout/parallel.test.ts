import { afterAll, describe, expect, it } from 'vitest';
import { closeCodeSandbox } from '../tools/code.ts';
import { requestMeta, rollout } from './engine.ts';
import { PROTOCOLS } from './protocol/index.ts';
import { agentContext } from './record.ts';
import { replay } from './replay.ts';
import { ScriptedPolicy, type ScriptFn } from './scripted/policy.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';
import type { Trajectory } from './types.ts';

/**
 * Parallel delegation through the real engine: a planner that asks two independent lookups in one
 * message (several <delegate> tags, or several <tool_call> blocks under the json protocol), workers
 * that run side by side, reports that come back in order as one tool result per call, and replays
 * that mask one of the two parallel workers.
 */
afterAll(async () => {
  await closeCodeSandbox();
});

const PH = '[no report]';
const ANSWERS: Record<string, string> = { 'Who founded Zorvex?': 'Alin Marek', 'Where was Bravo Tull born?': 'Osk' };
const LOOKUPS = Object.keys(ANSWERS);

/** Both lookups at once when allowed, else one per message; then the two reports joined as the answer. */
const fanOut: ScriptFn = (req) => {
  const m = requestMeta(req);
  const p = PROTOCOLS[m.protocol];
  if (m.role === 'planner') {
    if (m.results.length >= 2) return p.formatAnswer(m.results.map((r) => r.output).join(' and '));
    if ((m.maxParallel ?? 1) >= 2) return p.formatCalls(LOOKUPS.map((input) => ({ name: 'delegate' as const, input })));
    return p.formatCall('delegate', LOOKUPS[m.results.length] as string);
  }
  if (m.turn === 0) return p.formatCall('search', m.subtask ?? '');
  return p.formatAnswer(ANSWERS[m.subtask ?? ''] ?? 'unknown');
};

for (const protocol of ['tags', 'json'] as const) {
  describe(`parallel delegation (${protocol})`, () => {
    const cfg = rolloutConfig({ protocol, maxParallelDelegations: 2, maxContext: 100_000 });

    it('runs the workers of one planner message side by side and returns their reports in order', async () => {
      const policy = new ScriptedPolicy(fanOut);
      const { trajectories } = await rollout(policy, [handEpisode()], { cfg, groupSize: 1 });
      const t = trajectories[0] as Trajectory;
      expect(t.finalAnswer).toBe('Alin Marek and Osk');
      // the planner is told it may delegate side by side
      expect(t.messages[0]?.text).toContain(
        protocol === 'tags'
          ? 'Tools (one per message, or up to 2 <delegate> together)'
          : 'or up to 2 delegate functions at once',
      );
      const planner = t.messages.filter((m) => m.agent === 0 && m.chatRole === 'assistant');
      expect(planner).toHaveLength(2);
      expect(
        planner[0]?.toolCalls.map((c) => [
          c.name,
          c.args.includes('Zorvex') || c.args.includes('Bravo'),
          c.valid,
          c.result,
          c.workerAgent,
        ]),
      ).toEqual([
        ['delegate', true, true, 'Alin Marek', 1],
        ['delegate', true, true, 'Osk', 2],
      ]);
      expect(t.agents.map((a) => [a.role, a.delegation, a.subtask ?? null])).toEqual([
        ['planner', null, null],
        ['worker', 0, LOOKUPS[0]],
        ['worker', 1, LOOKUPS[1]],
      ]);
      // planner turn, the two workers' searches together, their answers together, planner answer
      expect(policy.batches).toEqual([1, 2, 2, 1]);
      // one tool result per call, in call order, right after the planner's message
      const mine = t.messages.filter((m) => m.agent === 0);
      const shown = mine.slice(
        mine.indexOf(planner[0] as (typeof mine)[number]) + 1,
        mine.indexOf(planner[1] as (typeof mine)[number]),
      );
      const results = shown.map((m) => PROTOCOLS[protocol].unwrapResult(m.text));
      expect(results).toEqual(['Alin Marek', 'Osk']);
      // the planner's context for its answer holds both results, in order, after its parallel message
      const answer = planner[1];
      const ctx = agentContext(t, 0, answer?.index as number).slice(-3);
      expect(ctx.map((c) => PROTOCOLS[protocol].unwrapResult(c.content))).toEqual([
        planner[0]?.text,
        'Alin Marek',
        'Osk',
      ]);
    });

    it(
      'masks one of two parallel workers in a replay (final): the other report stays, the planner sees the ' +
        'placeholder',
      async () => {
        const { trajectories } = await rollout(new ScriptedPolicy(fanOut), [handEpisode()], { cfg, groupSize: 1 });
        const t = trajectories[0] as Trajectory;
        const policy = new ScriptedPolicy(fanOut);
        const [m0, m1] = await replay(
          policy,
          [
            { traj: t, episode: handEpisode(), masked: [0] },
            { traj: t, episode: handEpisode(), masked: [1] },
          ],
          { cfg, mode: 'final', placeholder: PH },
        );
        expect(m0?.finalAnswer).toBe(`${PH} and Osk`);
        expect(m1?.finalAnswer).toBe(`Alin Marek and ${PH}`);
        const calls = m1?.messages.filter((m) => m.agent === 0).flatMap((m) => m.toolCalls);
        expect(calls?.map((c) => [c.result, c.masked ?? false, c.workerAgent ?? null])).toEqual([
          ['Alin Marek', false, 1],
          [PH, true, null],
        ]);
        // the kept worker is copied verbatim; only the planner's answer was generated, for both replays at once
        expect(m1?.messages.filter((m) => m.agent === 1).map((m) => m.text)).toEqual(
          t.messages.filter((m) => m.agent === 1).map((m) => m.text),
        );
        expect(policy.batches).toEqual([2]);
      },
    );

    it('with one call per message allowed, the message ends at its first call (the stops cut it there)', async () => {
      const one = rolloutConfig({ protocol, maxParallelDelegations: 1, maxContext: 100_000, maxPlannerTurns: 2 });
      const both: ScriptFn = (req) => {
        const m = requestMeta(req);
        const p = PROTOCOLS[m.protocol];
        return m.role === 'planner' && m.turn === 0
          ? p.formatCalls(LOOKUPS.map((input) => ({ name: 'delegate' as const, input })))
          : fanOut(req);
      };
      const { trajectories } = await rollout(new ScriptedPolicy(both), [handEpisode()], { cfg: one, groupSize: 1 });
      const first = trajectories[0]?.messages.find((m) => m.agent === 0 && m.chatRole === 'assistant');
      expect(first?.text).toBe(PROTOCOLS[protocol].formatCall('delegate', LOOKUPS[0] as string));
      expect(first?.toolCalls).toHaveLength(1);
      expect(first?.toolCalls[0]).toMatchObject({ name: 'delegate', valid: true, result: 'Alin Marek' });
      // parsed as they would be without the stops, the two calls are refused in one line
      expect(
        PROTOCOLS[protocol].parse(
          PROTOCOLS[protocol].formatCalls(LOOKUPS.map((input) => ({ name: 'delegate' as const, input }))),
        ),
      ).toMatchObject({ kind: 'calls' });
    });

    it('more parallel delegations than allowed are refused in one line', async () => {
      const three: ScriptFn = (req) => {
        const m = requestMeta(req);
        const p = PROTOCOLS[m.protocol];
        return m.role === 'planner' && m.turn === 0
          ? p.formatCalls([...LOOKUPS, 'Where is Kelvar?'].map((input) => ({ name: 'delegate' as const, input })))
          : fanOut(req);
      };
      const { trajectories } = await rollout(new ScriptedPolicy(three), [handEpisode()], { cfg, groupSize: 1 });
      const first = trajectories[0]?.messages.find((m) => m.agent === 0 && m.chatRole === 'assistant');
      expect(first?.toolCalls[0]?.error).toBe('3 delegations in one message; at most 2 run side by side');
    });
  });
}
