import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Episode } from '../data/episode.ts';
import { blameLabels, locateFirstError, maxJudgeCalls, preferencePair, preferencePairs } from './first-error.ts';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import { getProtocol } from '../rollout/protocol/index.ts';
import { protocolAnswer } from './judges/index.ts';
import type { Judge, JudgeContext } from './judges/types.ts';
import { ruleJudge } from './judges/rule.ts';
import { appendPreferencePairs, readPreferencePairs, writePreferencePairs } from './pairs-jsonl.ts';

const episode: Episode = {
  id: 'ep',
  question: 'Where was the founder of Acme born?',
  answers: ['Lyon'],
  paragraphs: [],
  decomposition: [
    { id: 1, question: 'Who founded Acme?', answer: 'Ada Byron', paragraphSupportIdx: 0 },
    { id: 2, question: 'Where was #1 born?', answer: 'Lyon', paragraphSupportIdx: 1 },
  ],
};

/**
 * A prefix judge that fails from message `errorAt` on, counting its calls (the judge is the test's subject's input).
 */
function thresholdJudge(errorAt: number | null): Judge & { calls: number } {
  const j = {
    name: 'threshold',
    calls: 0,
    prefixFailed(_ctx: JudgeContext, end: number) {
      j.calls += 1;
      return Promise.resolve(errorAt !== null && end >= errorAt);
    },
    labelMessages: () => Promise.resolve(new Map()),
    acceptsAlternative: () => Promise.resolve(true),
  };
  return j;
}

describe('first-error binary search', () => {
  it('finds every possible first error within ceil(log2 T) + 1 judge calls', async () => {
    for (const nWorkers of [0, 1, 2, 3, 5, 9, 16]) {
      const traj = makeTrajectory({
        id: `t${nWorkers}`,
        workers: Array.from({ length: nWorkers }, (_, i) => ({ subtask: `s${i}`, answer: `a${i}` })),
        finalAnswer: 'x',
      });
      const gen = traj.messages.filter((m) => m.chatRole === 'assistant').map((m) => m.index);
      const t = gen.length;
      for (const e of [...gen, null]) {
        const judge = thresholdJudge(e);
        const r = await locateFirstError({ traj, episode }, judge);
        expect(r.index).toBe(e);
        expect(r.judgeCalls).toBe(judge.calls);
        expect(judge.calls).toBeLessThanOrEqual(maxJudgeCalls(t));
      }
    }
    // budget values: T=1 -> 1, T=2 -> 2, T=3 -> 3, T=16 -> 5, T=17 -> 6
    expect([1, 2, 3, 16, 17].map(maxJudgeCalls)).toEqual([1, 2, 3, 5, 6]);
  });
  it('an error between two generated messages is attributed to the later generated one', async () => {
    const traj = makeTrajectory({ id: 't', workers: [{ subtask: 'a', answer: 'b' }], finalAnswer: 'b' });
    // message 2 is the planner's delegate (assistant); 3 is the worker's system prompt (not generated)
    const r = await locateFirstError({ traj, episode }, thresholdJudge(3));
    const firstGenAfter = traj.messages.find((m) => m.index >= 3 && m.chatRole === 'assistant');
    expect(r.index).toBe(firstGenAfter?.index);
  });
  it('rule judge names the saboteur report; repairs after it are not blamed', async () => {
    // hop 1 answered right, then a saboteur answers hop 1 wrongly; the planner trusts the latest,
    // hop 2 is asked about the wrong person and the final answer is wrong.
    const traj = makeTrajectory({
      id: 'sab',
      workers: [
        { subtask: 'Who founded Acme?', answer: 'Ada Byron' },
        { subtask: 'Who founded Acme?', answer: 'Bob Stone' },
        { subtask: 'Where was Bob Stone born?', answer: 'Paris' },
      ],
      finalAnswer: 'Paris',
    });
    const judge = ruleJudge({ parseAnswer: protocolAnswer(getProtocol('tags')) });
    const r = await locateFirstError({ traj, episode }, judge);
    const saboteurReport = traj.messages.filter((m) => m.agent === 2 && m.chatRole === 'assistant').at(-1);
    expect(r.index).toBe(saboteurReport?.index);
    expect(r.agent).toBe(2);
    expect(r.role).toBe('worker');
    const labels = blameLabels(r, traj);
    const generated = traj.messages.filter((m) => m.chatRole === 'assistant').map((m) => m.index);
    expect([...labels.keys()].sort((a, b) => a - b)).toEqual(generated);
    expect([...labels.entries()].filter(([, l]) => l !== 0)).toEqual([[saboteurReport?.index, -1]]);
  });
  it('preference pair: resample until the judge accepts; JSONL round trip, atomic', async () => {
    const traj = makeTrajectory({
      id: 'sab',
      workers: [
        { subtask: 'Who founded Acme?', answer: 'Bob Stone' },
        { subtask: 'Where was Bob Stone born?', answer: 'Paris' },
      ],
      finalAnswer: 'Paris',
    });
    const ctx = { traj, episode };
    const judge = ruleJudge({ parseAnswer: protocolAnswer(getProtocol('tags')) });
    const first = await locateFirstError(ctx, judge);
    const alternatives = ['<answer>Bob Stone</answer>', '<answer>Carl</answer>', '<answer>Ada Byron</answer>'];
    const seen: number[] = [];
    const pair = await preferencePair(
      ctx,
      first,
      judge,
      (c, i) =>
        c.traj.messages
          .filter((m) => m.agent === c.traj.messages[i].agent && m.index < i)
          .map((m) => ({ role: m.chatRole, content: m.text })),
      (reqs) => {
        seen.push(...reqs.map((r) => r.attempt));
        return Promise.resolve(reqs.map((r) => alternatives[r.attempt - 1] ?? '<answer>Dora</answer>'));
      },
      4,
    );
    // One round per attempt: identical alternative skipped, wrong one rejected, third accepted.
    expect(seen).toEqual([1, 2, 3]);
    expect(pair?.chosen).toBe('<answer>Ada Byron</answer>');
    expect(pair?.rejected).toBe('<answer>Bob Stone</answer>');
    expect(pair?.prefix.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(pair?.metadata).toMatchObject({
      trajectoryId: 'sab',
      episodeId: 'ep',
      agent: 1,
      role: 'worker',
      judge: 'rule',
      attempts: 3,
    });
    const none = await preferencePair(
      ctx,
      first,
      judge,
      () => [],
      (reqs) => Promise.resolve(reqs.map(() => '<answer>Carl</answer>')),
      3,
    );
    expect(none).toBeNull();

    const dir = mkdtempSync(join(tmpdir(), 'pairs-'));
    const file = join(dir, 'pairs.jsonl');
    if (!pair) throw new Error('no pair');
    writePreferencePairs(file, [pair]);
    appendPreferencePairs(file, [pair]);
    expect(readPreferencePairs(file)).toEqual([pair, pair]);
    expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(3);
    expect(readdirSync(dir)).toEqual(['pairs.jsonl']); // no temp file left behind
    writeFileSync(file, '{"prefix": [], "chosen": "a", "rejected": "b", "metadata": {}}\n{"prefix": "x"}\n');
    expect(() => readPreferencePairs(file)).toThrow(/pairs\.jsonl:2: field 'prefix'/);
  });
  it('preference pairs of several errors: one batched call per round, repaired errors drop out', async () => {
    const judge = ruleJudge({ parseAnswer: protocolAnswer(getProtocol('tags')) });
    const make = (id: string) =>
      makeTrajectory({
        id,
        workers: [
          { subtask: 'Who founded Acme?', answer: 'Bob Stone' },
          { subtask: 'Where was Bob Stone born?', answer: 'Paris' },
        ],
        finalAnswer: 'Paris',
      });
    const items = await Promise.all(
      ['a', 'b', 'c'].map(async (id) => {
        const ctx = { traj: make(id), episode };
        return { ctx, first: await locateFirstError(ctx, judge) };
      }),
    );
    // c has no located error: it is never resampled.
    items[2] = { ...items[2], first: { ...items[2].first, index: null, agent: null, role: null } };
    const calls: string[][] = [];
    const right = '<answer>Ada Byron</answer>';
    const pairs = await preferencePairs(
      items,
      judge,
      () => [],
      (reqs) => {
        calls.push(reqs.map((r) => `${r.ctx.traj.id}#${r.attempt}`));
        // a is repaired at once, b on its second attempt.
        return Promise.resolve(
          reqs.map((r) => (r.ctx.traj.id === 'a' || r.attempt === 2 ? right : '<answer>Carl</answer>')),
        );
      },
      3,
    );
    expect(calls).toEqual([['a#1', 'b#1'], ['b#2']]);
    expect(pairs.map((p) => p?.metadata.attempts ?? null)).toEqual([1, 2, null]);
    expect(pairs[0]?.chosen).toBe(right);
  });
});
