import { afterAll, describe, expect, it } from 'vitest';
import { closeCodeSandbox } from '../tools/code.ts';
import { requestMeta, rollout } from './engine.ts';
import type { Policy, PolicyRequest, PolicyResponse } from './policy.ts';
import { PROTOCOLS } from './protocol/index.ts';
import { agentContext } from './record.ts';
import { ScriptedPolicy, type ScriptFn } from './scripted/policy.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';
import type { ChatMessage, Trajectory } from './types.ts';

afterAll(async () => {
  await closeCodeSandbox();
});

const ANSWERS: Record<string, string> = {
  'Who founded Zorvex?': 'Alin Marek',
  'In which year was Alin Marek born?': '1950',
};

/** A planner that delegates the two hops; workers search once and answer from a table. */
const twoHop: ScriptFn = (req) => {
  const m = requestMeta(req);
  const p = PROTOCOLS[m.protocol];
  if (m.role === 'planner') {
    if (m.turn === 0) return `Hop one. ${p.formatCall('delegate', 'Who founded Zorvex?')}`;
    if (m.turn === 1) return p.formatCall('delegate', `In which year was ${m.results[0]?.output} born?`);
    return p.formatAnswer(m.results[1]?.output ?? '?');
  }
  if (m.turn === 0) return p.formatCall('search', m.subtask ?? '');
  return p.formatAnswer(ANSWERS[m.subtask ?? ''] ?? 'unknown');
};

/** Records every request so tests can compare it with agentContext. */
class Recording implements Policy {
  readonly seen: PolicyRequest[] = [];
  constructor(private readonly inner: Policy) {}
  generate(requests: PolicyRequest[]): Promise<PolicyResponse[]> {
    this.seen.push(...requests);
    return this.inner.generate(requests);
  }
}

function checkContexts(trajs: Trajectory[], seen: PolicyRequest[]): number {
  // Requests of one agent come in turn order; match them to that agent's assistant messages.
  let checked = 0;
  for (const t of trajs) {
    for (const a of t.agents) {
      const reqs = seen.filter((r) => r.key === `${t.id}/${a.id}`);
      const msgs = t.messages.filter((m) => m.agent === a.id && m.chatRole === 'assistant');
      expect(reqs.length).toBe(msgs.length);
      msgs.forEach((m, i) => {
        expect(agentContext(t, a.id, m.index)).toEqual(reqs[i]?.messages as ChatMessage[]);
        checked++;
      });
    }
  }
  return checked;
}

describe('rollout engine', () => {
  it('runs planner and workers through the real tools and records every message', async () => {
    const cfg = rolloutConfig();
    const policy = new Recording(new ScriptedPolicy(twoHop));
    const { trajectories } = await rollout(policy, [handEpisode()], { cfg, groupSize: 1 });
    const t = trajectories[0] as Trajectory;
    expect(t.finalAnswer).toBe('1950');
    expect(t.id).toBe('hand1/0');
    // planner: system, user, delegate, [worker 1: system, user, search, result, answer], report, delegate,
    // [worker 2: system, user, search, result, answer], report, answer = 17 messages
    expect(t.messages.map((m) => `${m.agent}${m.chatRole[0]}`)).toEqual([
      '0s',
      '0u',
      '0a',
      '1s',
      '1u',
      '1a',
      '1t',
      '1a',
      '0t',
      '0a',
      '2s',
      '2u',
      '2a',
      '2t',
      '2a',
      '0t',
      '0a',
    ]);
    expect(t.messages.map((m) => m.index)).toEqual([...Array(17).keys()]);
    expect(t.agents).toEqual([
      { id: 0, role: 'planner', delegation: null, answer: '1950', endReason: 'answer' },
      {
        id: 1,
        role: 'worker',
        delegation: 0,
        subtask: 'Who founded Zorvex?',
        answer: 'Alin Marek',
        endReason: 'answer',
      },
      {
        id: 2,
        role: 'worker',
        delegation: 1,
        subtask: 'In which year was Alin Marek born?',
        answer: '1950',
        endReason: 'answer',
      },
    ]);
    const d0 = t.messages[2];
    expect(d0?.toolCalls).toEqual([
      { name: 'delegate', args: 'Who founded Zorvex?', valid: true, result: 'Alin Marek', workerAgent: 1 },
    ]);
    expect(t.messages[8]?.text).toBe('<result>Alin Marek</result>');
    const search = t.messages[5]?.toolCalls[0];
    expect(search?.name).toBe('search');
    expect(search?.valid).toBe(true);
    // BM25 ranks the paragraph titled Zorvex first for "Who founded Zorvex?" (topK 2 by default)
    // (only that paragraph shares a word with the query, so it is the only hit)
    expect(search?.retrievedIdx).toEqual([0]);
    expect(search?.result).toContain('[0] Zorvex: Zorvex is a company founded by Alin Marek in 1975.');
    expect(t.messages[12]?.toolCalls[0]?.retrievedIdx?.[0]).toBe(1);
    expect(checkContexts(trajectories, policy.seen)).toBe(7);
    // the system prompts carry the role's tools in the protocol syntax
    expect(t.messages[0]?.text).toContain('<delegate>subtask</delegate>');
    expect(t.messages[3]?.text).toContain('<search>query</search>');
  });

  it('runs the json protocol end to end', async () => {
    const cfg = rolloutConfig({ protocol: 'json' });
    const { trajectories } = await rollout(new ScriptedPolicy(twoHop), [handEpisode()], { cfg, groupSize: 1 });
    const t = trajectories[0] as Trajectory;
    expect(t.finalAnswer).toBe('1950');
    expect(t.messages[2]?.toolCalls[0]).toMatchObject({
      name: 'delegate',
      args: '{"subtask":"Who founded Zorvex?"}',
      valid: true,
    });
    expect(t.messages[8]).toMatchObject({ chatRole: 'user', text: '<tool_response>\nAlin Marek\n</tool_response>' });
  });

  it('decodes all generating agents of all trajectories in one call per step, across roles', async () => {
    const cfg = rolloutConfig();
    // Sample 1 of each episode first makes an invalid call, so it is a turn behind the others: from then
    // on its planner decodes in the same batches as the other trajectories' workers.
    const script: ScriptFn = (req) => {
      const m = requestMeta(req);
      if (m.role === 'planner' && m.sample === 1) {
        if (m.turn === 0) return 'let me think';
        return twoHop({ ...req, meta: { ...m, turn: m.turn - 1, results: m.results.slice(1) } });
      }
      return twoHop(req);
    };
    const policy = new Recording(new ScriptedPolicy(script));
    const inner = policy as unknown as { inner: ScriptedPolicy };
    const episodes = [handEpisode('e1'), handEpisode('e2')];
    const { trajectories, stats } = await rollout(policy, episodes, { cfg, groupSize: 3 });
    expect(trajectories.map((t) => t.id)).toEqual(['e1/0', 'e1/1', 'e1/2', 'e2/0', 'e2/1', 'e2/2']);
    expect(trajectories.every((t) => t.finalAnswer === '1950')).toBe(true);
    // Every trajectory always has exactly one agent generating, so steps = the longest trajectory's
    // assistant-message count (8 for the late ones: 1 invalid + 7), and every request is served once.
    const turns = trajectories.map((t) => t.messages.filter((m) => m.chatRole === 'assistant').length);
    expect(turns).toEqual([7, 8, 7, 7, 8, 7]);
    expect(stats.steps).toBe(8);
    expect(stats.requests).toBe(7 * 4 + 8 * 2);
    expect(inner.inner.batches).toEqual([6, 6, 6, 6, 6, 6, 6, 2]);
    const mixed = policy.seen.slice(6, 12).map((r) => r.role);
    expect(new Set(mixed)).toEqual(new Set(['planner', 'worker']));
    checkContexts(trajectories, policy.seen);
  });
});

describe('failures of the policy', () => {
  it('rejects the run with the policy error once every trajectory has settled', async () => {
    const cfg = rolloutConfig();
    let calls = 0;
    const flaky: Policy = {
      generate: async (reqs) => {
        if (++calls === 2) throw new Error('device lost');
        return new ScriptedPolicy(twoHop).generate(reqs);
      },
    };
    await expect(rollout(flaky, [handEpisode('a'), handEpisode('b')], { cfg, groupSize: 2 })).rejects.toThrow(
      'device lost',
    );
    expect(calls).toBe(2);
    const short: Policy = { generate: async () => [] };
    await expect(rollout(short, [handEpisode()], { cfg, groupSize: 1 })).rejects.toThrow(
      'policy.generate returned 0 responses for 1 requests',
    );
  });
});

describe('limits and invalid calls', () => {
  const run = async (script: ScriptFn, overrides: Record<string, unknown> = {}, policy?: Policy) => {
    const cfg = rolloutConfig(overrides);
    const { trajectories } = await rollout(policy ?? new ScriptedPolicy(script), [handEpisode()], {
      cfg,
      groupSize: 1,
    });
    return trajectories[0] as Trajectory;
  };

  it('ends a worker at max turns and reports the failure text; the unread last call is not executed', async () => {
    const t = await run(
      (req) => {
        const m = requestMeta(req);
        if (m.role === 'planner')
          return m.turn === 0 ? '<delegate>Who founded Zorvex?</delegate>' : `<answer>${m.results[0]?.output}</answer>`;
        return '<search>Zorvex</search>';
      },
      { maxWorkerTurns: 2, workerFailureText: 'no report' },
    );
    expect(t.agents[1]).toMatchObject({ endReason: 'max_turns', answer: null });
    expect(t.finalAnswer).toBe('no report');
    const calls = t.messages.filter((m) => m.agent === 1).flatMap((m) => m.toolCalls);
    expect(calls.map((c) => [c.valid, c.error ?? null])).toEqual([
      [true, null],
      [false, 'not executed: max_turns'],
    ]);
  });

  it('ends the planner at the delegation limit', async () => {
    const t = await run(
      (req) =>
        requestMeta(req).role === 'planner' ? '<delegate>Who founded Zorvex?</delegate>' : '<answer>A</answer>',
      { maxDelegations: 1 },
    );
    expect(t.agents.map((a) => a.endReason)).toEqual(['max_delegations', 'answer']);
    expect(t.finalAnswer).toBeNull();
    const calls = t.messages.filter((m) => m.agent === 0).flatMap((m) => m.toolCalls);
    expect(calls.map((c) => c.valid)).toEqual([true, false]);
    expect(calls[1]?.error).toBe('Error: delegation limit (1) reached');
  });

  it('records invalid calls, answers them with the error, and ends at max planner turns', async () => {
    const texts = ['<search>x</search>', '<delegate>a', 'just words', '<answer></answer>'];
    const t = await run((req) => texts[requestMeta(req).turn] ?? '', { maxPlannerTurns: 4 });
    const planner = t.messages.filter((m) => m.agent === 0);
    const calls = planner.flatMap((m) => m.toolCalls);
    expect(calls.map((c) => c.valid)).toEqual([false, false, false, false]);
    expect(calls[0]?.error).toBe("tool 'search' is not available to the planner (its tools: delegate, answer)");
    expect(calls[1]?.error).toContain('unclosed <delegate>');
    // an invalid call on the last turn keeps its own error
    expect(calls[3]?.error).toContain('empty <answer>');
    // three error results were shown; the fourth (last turn) was not
    expect(planner.filter((m) => m.chatRole === 'tool').map((m) => m.text)).toEqual([
      "<result>Error: tool 'search' is not available to the planner (its tools: delegate, answer)</result>",
      `<result>Error: ${calls[1]?.error}</result>`,
      `<result>Error: ${calls[2]?.error}</result>`,
    ]);
    expect(t.agents[0]?.endReason).toBe('max_turns');
  });

  it('ends an agent that writes nothing with no_action', async () => {
    const t = await run((req) =>
      requestMeta(req).role === 'planner'
        ? requestMeta(req).turn === 0
          ? '<delegate>Who founded Zorvex?</delegate>'
          : ''
        : '  ',
    );
    expect(t.agents.map((a) => a.endReason)).toEqual(['no_action', 'no_action']);
    expect(t.messages[2]?.toolCalls[0]?.result).toBe('The worker found no answer.');
  });

  it('ends on max_new_tokens and max_context as the policy reports them', async () => {
    const lengthy: Policy = {
      generate: async (reqs) =>
        reqs.map(() => ({
          text: '<search>cut off',
          tokenIds: [5, 6],
          logprobs: [-1, -2],
          finishReason: 'length' as const,
          promptTokens: 10,
        })),
    };
    const t1 = await run(() => '', {}, lengthy);
    expect(t1.agents[0]?.endReason).toBe('max_new_tokens');
    expect(t1.messages[2]?.toolCalls[0]?.error).toContain('unclosed <search>');
    expect(t1.messages[2]?.tokenIds).toEqual([5, 6]);
    const full: Policy = {
      generate: async (reqs) =>
        reqs.map(() => ({
          text: '<delegate>Who?</delegate>',
          tokenIds: [1, 2, 3],
          logprobs: [0, 0, 0],
          finishReason: 'stop' as const,
          promptTokens: 98,
        })),
    };
    const t2 = await run(() => '', { maxContext: 100 }, full);
    expect(t2.agents).toHaveLength(1);
    expect(t2.agents[0]?.endReason).toBe('max_context');
    expect(t2.messages[2]?.toolCalls[0]).toEqual({
      name: 'delegate',
      args: 'Who?',
      valid: false,
      error: 'not executed: max_context',
    });
  });

  it('keeps a worker from delegating and passes the worker its meta', async () => {
    const metas: unknown[] = [];
    const t = await run(
      (req) => {
        const m = requestMeta(req);
        if (m.role === 'planner')
          return m.turn === 0 ? '<delegate>Who founded Zorvex?</delegate>' : '<answer>done</answer>';
        metas.push({ d: m.delegation, s: m.subtask, turn: m.turn, n: m.results.length });
        return m.turn === 0 ? '<delegate>x</delegate>' : '<calculate>2 * 21</calculate>';
      },
      { maxWorkerTurns: 3 },
    );
    const calls = t.messages.filter((m) => m.agent === 1).flatMap((m) => m.toolCalls);
    expect(calls[0]?.error).toContain("tool 'delegate' is not available to the worker");
    expect(calls[1]).toEqual({ name: 'calculate', args: '2 * 21', valid: true, result: '42' });
    expect(metas).toEqual([
      { d: 0, s: 'Who founded Zorvex?', turn: 0, n: 0 },
      { d: 0, s: 'Who founded Zorvex?', turn: 1, n: 1 },
      { d: 0, s: 'Who founded Zorvex?', turn: 2, n: 2 },
    ]);
  });
});
