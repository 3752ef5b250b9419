import { afterAll, describe, expect, it } from 'vitest';
import { closeCodeSandbox } from '../tools/code.ts';
import { requestMeta, rollout } from './engine.ts';
import type { Policy, PolicyRequest, PolicyResponse } from './policy.ts';
import { PROTOCOLS } from './protocol/index.ts';
import { replay } from './replay.ts';
import { garbagePolicy } from './scripted/garbage.ts';
import { applyStop, ScriptedPolicy, type ScriptFn } from './scripted/policy.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';
import type { Trajectory } from './types.ts';

afterAll(async () => {
  await closeCodeSandbox();
});

const PH = '[no report]';
const ANSWERS: Record<string, string> = {
  'Who founded Zorvex?': 'Alin Marek',
  'In which year was Alin Marek born?': '1950',
};

/** Two hops, then answer the last report; workers search once and answer from a table. */
const twoHop: ScriptFn = (req) => {
  const m = requestMeta(req);
  const p = PROTOCOLS[m.protocol];
  if (m.role === 'planner') {
    if (m.turn === 0) return p.formatCall('delegate', 'Who founded Zorvex?');
    if (m.turn === 1) return p.formatCall('delegate', `In which year was ${m.results[0]?.output} born?`);
    return p.formatAnswer(m.results.at(-1)?.output ?? '?');
  }
  if (m.turn === 0) return p.formatCall('search', m.subtask ?? '');
  return p.formatAnswer(ANSWERS[m.subtask ?? ''] ?? 'unknown');
};

/**
 * A policy with a character-level "tokenizer" (token id = UTF-16 code unit) whose logprob of a token is
 * a fixed function of the token and its position, so that forced replays can be checked exactly. It
 * honours `forcedTokens` as an LM must: the text is the decoded forced ids.
 */
class CharPolicy implements Policy {
  calls = 0;
  constructor(private readonly script: ScriptFn) {}
  async generate(reqs: PolicyRequest[]): Promise<PolicyResponse[]> {
    this.calls++;
    return reqs.map((r) => {
      const text = r.forcedTokens ? String.fromCharCode(...r.forcedTokens) : applyStop(this.script(r), r.stop).text;
      const ids = [...text].map((c) => c.charCodeAt(0));
      const promptTokens = r.messages.reduce((n, m) => n + m.content.length, 0);
      return {
        text,
        tokenIds: ids,
        logprobs: ids.map((id, i) => -((id * 31 + i) % 97) / 10),
        finishReason: 'stop',
        promptTokens,
      };
    });
  }
}

/** Fails the test if called: replays that copy messages must not generate. */
const forbidden: Policy = {
  generate: () => Promise.reject(new Error('policy must not be called')),
};

const cfg = rolloutConfig({ maxContext: 100_000 });

async function record(script: ScriptFn, g = 1): Promise<Trajectory[]> {
  return (await rollout(new ScriptedPolicy(script), [handEpisode()], { cfg, groupSize: g })).trajectories;
}

describe('replay: exact', () => {
  it('reproduces garbage trajectories from recorded texts without calling the policy', async () => {
    // Programs that loop forever are left out: whether one times out in setup or in the loop depends on
    // the machine's load, so the code tool is only deterministic for programs that finish.
    const cfgG = rolloutConfig({ code: { timeoutMs: 2000 } });
    const { trajectories } = await rollout(garbagePolicy(11, { loops: false }), [handEpisode()], {
      cfg: cfgG,
      groupSize: 40,
    });
    const again = await replay(
      forbidden,
      trajectories.map((traj) => ({ traj, episode: handEpisode(), masked: [] })),
      { cfg: cfgG, mode: 'exact', placeholder: PH },
    );
    expect(again).toEqual(trajectories);
    // not vacuous: the garbage produced workers and invalid calls
    expect(trajectories.some((t) => t.agents.length > 1)).toBe(true);
  });

  it('reproduces token-level trajectories through forcedTokens (text, ids and logprobs)', async () => {
    const gen = new CharPolicy(twoHop);
    const { trajectories } = await rollout(gen, [handEpisode()], { cfg, groupSize: 3 });
    expect(trajectories[0]?.messages[2]?.tokenIds.length).toBeGreaterThan(0);
    const forcedSeen: number[][] = [];
    // The replaying policy knows nothing of the script: everything it emits comes from the forced ids.
    const replayer = new CharPolicy(() => 'WRONG');
    const spy: Policy = {
      generate: (reqs) => {
        forcedSeen.push(...reqs.map((r) => r.forcedTokens ?? []));
        return replayer.generate(reqs);
      },
    };
    const again = await replay(
      spy,
      trajectories.map((traj) => ({ traj, episode: handEpisode(), masked: [] })),
      { cfg, mode: 'exact', placeholder: PH },
    );
    expect(again).toEqual(trajectories);
    expect(forcedSeen).toHaveLength(3 * 7);
    expect(forcedSeen.every((f) => f.length > 0)).toBe(true);
    // batched: 7 steps of 3 requests
    expect(replayer.calls).toBe(7);
  });
});

describe('replay: counterfactual', () => {
  it('final: keeps everything, masks the report, regenerates only the final answer', async () => {
    const [traj] = await record(twoHop);
    const t = traj as Trajectory;
    const policy = new ScriptedPolicy(twoHop);
    const [m1, m0, none] = await replay(
      policy,
      [
        { traj: t, episode: handEpisode(), masked: [1] },
        { traj: t, episode: handEpisode(), masked: [0] },
        { traj: t, episode: handEpisode(), masked: [] },
      ],
      { cfg, mode: 'final', placeholder: PH },
    );
    // one decoding step for all three replays: only the last planner message is generated
    expect(policy.batches).toEqual([3]);
    expect(m1?.finalAnswer).toBe(PH);
    expect(m1?.id).toBe('hand1/0~final:1');
    // masked delegation 1: no worker, its call flagged; worker 0 copied verbatim
    expect(m1?.agents.map((a) => [a.role, a.delegation])).toEqual([
      ['planner', null],
      ['worker', 0],
    ]);
    const calls = m1?.messages.filter((m) => m.agent === 0).flatMap((m) => m.toolCalls);
    expect(calls).toEqual([
      { name: 'delegate', args: 'Who founded Zorvex?', valid: true, result: 'Alin Marek', workerAgent: 1 },
      { name: 'delegate', args: 'In which year was Alin Marek born?', valid: true, result: PH, masked: true },
    ]);
    expect(m1?.messages.filter((m) => m.agent === 1)).toEqual(t.messages.filter((m) => m.agent === 1));
    // masking hop 1 does not change the final answer when only the answer is regenerated
    expect(m0?.finalAnswer).toBe('1950');
    expect(none?.finalAnswer).toBe('1950');
    expect(none?.messages.map((m) => m.text)).toEqual(t.messages.map((m) => m.text));
  });

  it(
    "replan: masking hop 1 changes hop 2's subtask, so a worker runs on the new subtask (exact " + 'transcript)',
    async () => {
      const [traj] = await record(twoHop);
      const t = traj as Trajectory;
      const policy = new ScriptedPolicy(twoHop);
      const [r] = await replay(policy, [{ traj: t, episode: handEpisode(), masked: [0] }], {
        cfg,
        mode: 'replan',
        placeholder: PH,
      });
      const rt = r as Trajectory;
      // The planner's turn 0 (its first delegation) is copied; everything after it is regenerated.
      expect(rt.messages.filter((m) => m.chatRole !== 'system').map((m) => [m.agent, m.chatRole, m.text])).toEqual([
        [0, 'user', 'In which year was the founder of Zorvex born?'],
        [0, 'assistant', '<delegate>Who founded Zorvex?</delegate>'],
        [0, 'tool', `<result>${PH}</result>`],
        [0, 'assistant', `<delegate>In which year was ${PH} born?</delegate>`],
        // the recorded hop-2 report answered another subtask: a worker runs on this one
        [1, 'user', `In which year was ${PH} born?`],
        [1, 'assistant', `<search>In which year was ${PH} born?</search>`],
        [
          1,
          'tool',
          '<result>[1] Alin Marek: Alin Marek was born in 1950 in Kelvar.\n[3] Bravo Tull: Bravo Tull was born in ' +
            '1961 in Osk.</result>',
        ],
        [1, 'assistant', '<answer>unknown</answer>'],
        [0, 'tool', '<result>unknown</result>'],
        [0, 'assistant', '<answer>unknown</answer>'],
      ]);
      const calls = rt.messages.filter((m) => m.agent === 0).flatMap((m) => m.toolCalls);
      expect(calls).toEqual([
        { name: 'delegate', args: 'Who founded Zorvex?', valid: true, result: PH, masked: true },
        { name: 'delegate', args: `In which year was ${PH} born?`, valid: true, result: 'unknown', workerAgent: 1 },
      ]);
      expect(rt.agents.map((a) => [a.delegation, a.subtask ?? null])).toEqual([
        [null, null],
        [1, `In which year was ${PH} born?`],
      ]);
      // planner turn 1, the worker's two turns, planner turn 2
      expect(policy.batches).toEqual([1, 1, 1, 1]);
      expect(rt.finalAnswer).toBe('unknown');
    },
  );

  it(
    'replan with nothing masked: the regenerated planner asks the recorded subtasks, so their reports are reused ' +
      'and no worker runs',
    async () => {
      const [traj] = await record(twoHop);
      const t = traj as Trajectory;
      const policy = new ScriptedPolicy(twoHop);
      const [r] = await replay(policy, [{ traj: t, episode: handEpisode(), masked: [] }], {
        cfg,
        mode: 'replan',
        placeholder: PH,
      });
      expect(r?.messages.map((m) => m.text)).toEqual(t.messages.map((m) => m.text));
      expect(r?.agents.map((a) => [a.delegation, a.subtask ?? null])).toEqual(
        t.agents.map((a) => [a.delegation, a.subtask ?? null]),
      );
      expect(policy.batches).toEqual([1, 1]); // planner turns 1 and 2 only
    },
  );

  it(
    'replan: a changed subtask at a recorded position runs a worker; the recorded report is not reused by ' +
      'position',
    async () => {
      // This planner re-asks hop one whenever a report is the placeholder.
      const cautious: ScriptFn = (req) => {
        const m = requestMeta(req);
        if (m.role === 'planner' && m.results.at(-1)?.output === PH) return '<delegate>Who founded Zorvex?</delegate>';
        if (m.role === 'planner' && m.results.length === 2 && m.results[0]?.output === PH)
          return '<delegate>In which year was Alin Marek born?</delegate>';
        if (m.role === 'planner' && m.turn >= 2) return `<answer>${m.results.at(-1)?.output}</answer>`;
        return twoHop(req);
      };
      const [traj] = await record(cautious);
      const t = traj as Trajectory;
      expect(t.agents.map((a) => a.subtask ?? null)).toEqual([
        null,
        'Who founded Zorvex?',
        'In which year was Alin Marek born?',
      ]);
      const [r] = await replay(new ScriptedPolicy(cautious), [{ traj: t, episode: handEpisode(), masked: [0] }], {
        cfg,
        mode: 'replan',
        placeholder: PH,
      });
      const rt = r as Trajectory;
      // delegation 0: placeholder; 1: asks hop one again (recorded delegation 1 asked hop two): a worker runs; 2:
      // beyond the record, a worker runs
      const calls = rt.messages.filter((m) => m.agent === 0).flatMap((m) => m.toolCalls);
      expect(calls.map((c) => [c.args, c.result, c.masked ?? null, c.workerAgent ?? null])).toEqual([
        ['Who founded Zorvex?', PH, true, null],
        ['Who founded Zorvex?', 'Alin Marek', null, 1],
        ['In which year was Alin Marek born?', '1950', null, 2],
      ]);
      expect(rt.agents.map((a) => [a.delegation, a.subtask ?? null])).toEqual([
        [null, null],
        [1, 'Who founded Zorvex?'],
        [2, 'In which year was Alin Marek born?'],
      ]);
      // the fresh workers generated their messages: none is a copy of a recorded worker's
      expect(rt.messages.filter((m) => m.agent === 1 && m.chatRole === 'assistant').map((m) => m.text)).toEqual([
        '<search>Who founded Zorvex?</search>',
        '<answer>Alin Marek</answer>',
      ]);
      expect(rt.finalAnswer).toBe('1950');
    },
  );

  it('rejects a mask that names no delegation', async () => {
    const [t] = await record(twoHop);
    await expect(
      replay(forbidden, [{ traj: t as Trajectory, episode: handEpisode(), masked: [5] }], {
        cfg,
        mode: 'final',
        placeholder: PH,
      }),
    ).rejects.toThrow('replay hand1/0: masked delegation 5 does not exist (the trajectory has 2 delegations)');
    await expect(
      replay(forbidden, [{ traj: t as Trajectory, episode: handEpisode('other'), masked: [] }], {
        cfg,
        mode: 'final',
        placeholder: PH,
      }),
    ).rejects.toThrow('trajectory is of episode hand1, not other');
  });
});
