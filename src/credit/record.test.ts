import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { creditSection } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { getProtocol } from '../rollout/protocol/index.ts';
import { createJudge } from './judges/index.ts';
import { combinedOutcome, defineReward, namedRewards } from './user-reward.ts';
import { creditAndRecord, gameRunner, makeTrajectory } from '../../test/credit-fixtures.ts';
import {
  GZIP_ABOVE,
  RECORD_VERSION,
  creditHeader,
  listStepRecords,
  nextEvalStep,
  readStepRecord,
  sampleGroups,
  writeStepRecord,
  type StepRecord,
} from './record.ts';

const episode: Episode = {
  id: 'ep',
  question: 'Where was the founder of Acme born?',
  answers: ['yes'],
  paragraphs: [],
};
const w = (subtask: string, answer: string) => ({ subtask, answer });
// Worker 1 misleads: the team succeeds iff worker 0 reports and worker 1 does not.
const game = (s: number): boolean => (s & 1) === 1 && (s & 2) === 0;
const a = makeTrajectory({
  id: 'a',
  workers: [w('Who founded Acme?', 'Ada'), w('Where was Ada born?', 'Zhobrel')],
  finalAnswer: 'no',
});

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('trajectory records for sharp view', () => {
  it('keeps v(S), the replayed answers and their success, per coalition (LOO)', async () => {
    const cfg = creditSection.parse({ method: 'loo', replays: 1 });
    const { record: g } = await creditAndRecord([a], episode, gameRunner(game), cfg);
    const t = g.trajectories[0];
    expect(t.success).toBe(0);
    expect(t.noise).toBe(0);
    // v(N) = 0 (replayed 'no', as recorded); without worker 0: 0; without worker 1: 1 -> Delta = [0, -1].
    expect(t.deltas).toEqual([0, -1]);
    expect(t.coalitions).toEqual([
      { coalition: 3, members: [0, 1], masked: [], value: 0, answers: [{ answer: 'no', success: 0 }] },
      { coalition: 2, members: [1], masked: [0], value: 0, answers: [{ answer: 'no', success: 0 }] },
      { coalition: 1, members: [0], masked: [1], value: 1, answers: [{ answer: 'yes', success: 1 }] },
    ]);
    expect(t.credits.map((c) => c.role)).toEqual(['planner', 'worker', 'worker']);
    expect(t.messages.map((m) => m.index)).toEqual(a.messages.map((m) => m.index));
    expect(t.messages[2]).toMatchObject({
      chatRole: 'assistant',
      text: '<delegate>Who founded Acme?</delegate>',
      toolCalls: [{ name: 'delegate', valid: true, workerAgent: 1 }],
    });
    expect(Object.keys(t.messages[2])).not.toContain('tokenIds');
  });

  it("under a user reward, each replay shows the reward v(S) averages, not the answer's accuracy", async () => {
    const cfg = creditSection.parse({ method: 'loo', replays: 1 });
    // 1 for 'yes', minus 0.5 for every delegation whose report the planner read (none is masked here).
    const reward = defineReward(({ answer, trajectory }) => {
      const read = trajectory.messages.flatMap((m) => m.toolCalls).filter((c) => c.name === 'delegate' && !c.masked);
      return (answer === 'yes' ? 1 : 0) - 0.5 * read.length;
    }, 'yesShort');
    const outcome = combinedOutcome(namedRewards([reward]));
    const { record: g } = await creditAndRecord([a], episode, gameRunner(game), cfg, {}, outcome);
    const t = g.trajectories[0];
    // gameRunner keeps the recorded messages, so both reports count: 'no' -> -1, 'yes' -> 0.
    expect(t.success).toBe(-1);
    expect(t.coalitions.map((c) => [c.coalition, c.value, c.answers])).toEqual([
      [3, -1, [{ answer: 'no', success: -1 }]],
      [2, -1, [{ answer: 'no', success: -1 }]],
      [1, 0, [{ answer: 'yes', success: 0 }]],
    ]);
    // Without workers nothing is replayed: the recorded answer shows its reward (0.25), not its accuracy (1).
    const alone = makeTrajectory({ id: 'b', workers: [], finalAnswer: 'yes' });
    const quarter = combinedOutcome(namedRewards([() => 0.25]));
    const solo = (await creditAndRecord([alone], episode, gameRunner(game), cfg, {}, quarter)).record.trajectories[0];
    expect(solo.coalitions).toEqual([
      { coalition: 0, members: [], masked: [], value: 0.25, answers: [{ answer: 'yes', success: 0.25 }] },
    ]);
  });

  it('shapley with two replays per coalition: every replay answer is kept', async () => {
    const cfg = creditSection.parse({ method: 'shapley', replays: 2 });
    const t = (await creditAndRecord([a], episode, gameRunner(game), cfg)).record.trajectories[0];
    // phi_0 = ((v{0} - v{}) + (v{0,1} - v{1})) / 2 = (1 + 0) / 2; phi_1 = (0 + (0 - 1)) / 2.
    expect(t.phi).toEqual([0.5, -0.5]);
    expect(t.coalitions.map((c) => c.coalition)).toEqual([3, 2, 1, 0]);
    expect(t.coalitions.find((c) => c.coalition === 1)?.answers).toEqual([
      { answer: 'yes', success: 1 },
      { answer: 'yes', success: 1 },
    ]);
    expect(t.coalitions.find((c) => c.coalition === 0)?.answers).toHaveLength(2);
  });

  it('message shares, the first error and the preferred alternative (rule judge)', async () => {
    const ep: Episode = {
      ...episode,
      answers: ['Lima'],
      decomposition: [
        { id: 1, question: 'Who founded Acme?', answer: 'Ada Byron', paragraphSupportIdx: 0 },
        { id: 2, question: 'Where was #1 born?', answer: 'Lima', paragraphSupportIdx: 1 },
      ],
    };
    const b = makeTrajectory({ id: 'b', workers: [w('Who founded Acme?', 'Bob')], finalAnswer: 'no' });
    const judge = createJudge({ judge: 'rule', hopMatchF1: 0.5, judgeMargin: 0 }, { protocol: getProtocol('tags') });
    const cfg = creditSection.parse({ method: 'loo', messageLevel: true, failurePairs: true });
    const { res, record } = await creditAndRecord(
      [b],
      ep,
      gameRunner(() => false),
      cfg,
      {
        judge,
        contextOf: (ctx, i) =>
          ctx.traj.messages
            .filter((m) => m.agent === ctx.traj.messages[i].agent && m.index < i)
            .map((m) => ({ role: m.chatRole, content: m.text })),
        resample: (reqs) => Promise.resolve(reqs.map(() => '<answer>Ada Byron</answer>')),
      },
    );
    const t = record.trajectories[0];
    const report = b.messages.filter((m) => m.agent === 1 && m.chatRole === 'assistant').at(-1)?.index as number;
    expect(t.firstError).toMatchObject({ index: report, agent: 1, role: 'worker' });
    expect(t.pair).toMatchObject({
      messageIndex: report,
      chosen: '<answer>Ada Byron</answer>',
      rejected: '<answer>Bob</answer>',
      attempts: 1,
    });
    // Each message's share is the credit module's, and the shares of an agent sum to its total.
    for (const m of res.credited.flatMap((c) => c.messages ?? []))
      expect(t.messages[m.messageIndex].share).toEqual({ label: m.label, reward: m.reward });
    expect(t.messages[report].share?.label).toBe(-1);
    for (const c of t.credits) {
      const sum = t.messages
        .filter((m) => m.agent === c.agent && m.share)
        .reduce((s, m) => s + (m.share?.reward ?? 0), 0);
      expect(sum).toBeCloseTo(c.total, 9);
    }
  });

  it("repair: each delegation's reference report beside the recorded one, for sharp view", async () => {
    const ep: Episode = {
      ...episode,
      decomposition: [
        { id: 1, question: 'Who founded Acme?', answer: 'Ada Byron', paragraphSupportIdx: 0 },
        { id: 2, question: 'Where was #1 born?', answer: 'yes', paragraphSupportIdx: 1 },
      ],
    };
    const b = makeTrajectory({
      id: 'b',
      workers: [w('Who founded Acme?', 'Bob'), w('Where was Ada Byron born?', 'yes')],
      finalAnswer: 'no',
    });
    const cfg = creditSection.parse({ method: 'loo', counterfactual: 'repair', replays: 1 });
    const t = (await creditAndRecord([b], ep, gameRunner(game), cfg)).record.trajectories[0];
    expect(t.references).toEqual([
      {
        delegation: 0,
        reference: 'Ada Byron',
        report: 'Bob',
        right: false,
        goldSubtask: 'Who founded Acme?',
        delegationWrong: false,
      },
      {
        delegation: 1,
        reference: 'yes',
        report: 'yes',
        right: true,
        goldSubtask: 'Where was Ada Byron born?',
        delegationWrong: false,
      },
    ]);
    // Without repair or the oracle nothing of the kind is recorded.
    expect(
      (await creditAndRecord([b], ep, gameRunner(game), creditSection.parse({ method: 'loo', replays: 1 }))).record
        .trajectories[0].references,
    ).toBeUndefined();
  });

  it('samples the groups with a harmful worker first, then failures, in their order', () => {
    const mk = (id: string, deltas: number[], success: number) => ({
      episodeId: id,
      question: id,
      answers: [],
      trajectories: [{ deltas, success } as never],
    });
    const groups = [mk('ok', [1], 1), mk('fail', [0], 0), mk('harm', [-1], 0), mk('ok2', [0], 1)];
    expect(sampleGroups(groups, 2).map((g) => g.episodeId)).toEqual(['fail', 'harm']);
    expect(sampleGroups(groups, 1).map((g) => g.episodeId)).toEqual(['harm']);
    expect(sampleGroups(groups, 0)).toEqual([]);
  });

  it('writes whole files, gzipped when large, and reads them back in step order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-record-'));
    dirs.push(dir);
    const cfg = creditSection.parse({ method: 'loo' });
    const { record } = await creditAndRecord([a], episode, gameRunner(game), cfg);
    const small: StepRecord = {
      version: RECORD_VERSION,
      kind: 'train',
      step: 2,
      credit: creditHeader(cfg),
      groupsTotal: 1,
      groups: [record],
    };
    const f2 = writeStepRecord(dir, small);
    expect(f2.endsWith('step-000002.json')).toBe(true);
    const big: StepRecord = { ...small, step: 1, groups: [{ ...small.groups[0], question: 'x'.repeat(GZIP_ABOVE) }] };
    const f1 = writeStepRecord(dir, big);
    expect(f1.endsWith('step-000001.json.gz')).toBe(true);
    expect(listStepRecords(dir)).toEqual([f1, f2]);
    expect(readStepRecord(f1).groups[0].question).toHaveLength(GZIP_ABOVE);
    expect(readStepRecord(f2)).toEqual(small);
    // No temp files remain beside them.
    expect(readdirSync(join(dir, 'trajectories')).sort()).toEqual(['step-000001.json.gz', 'step-000002.json']);
    expect(nextEvalStep(dir)).toBe(1);
    writeStepRecord(dir, { ...small, kind: 'eval', step: 1 });
    expect(nextEvalStep(dir)).toBe(2);
  });
});
