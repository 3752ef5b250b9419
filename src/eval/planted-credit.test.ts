import { describe, expect, it } from 'vitest';
import type { StepRecord, TrajectoryRecord } from '../credit/record.ts';
import type { AgentRecord } from '../rollout/types.ts';
import { comparisonEpisode, plantedClaim } from '../../test/planted-fixtures.ts';
import { plantedCredit } from './planted-credit.ts';

const episode = (id: string, planted: boolean) =>
  comparisonEpisode(id, planted ? plantedClaim('1967', '1950') : undefined);
const worker = (d: number, answer: string): AgentRecord => ({
  id: d + 1,
  role: 'worker',
  delegation: d,
  answer,
  endReason: 'answer',
});
let n = 0;
const traj = (success: number, reports: string[], deltas: number[], phi?: number[]): TrajectoryRecord => ({
  id: `t${n++}`,
  sample: 0,
  finalAnswer: null,
  success,
  k: reports.length,
  agents: [
    { id: 0, role: 'planner', delegation: null, answer: 'x', endReason: 'answer' },
    ...reports.map((r, d) => worker(d, r)),
  ],
  messages: [],
  credits: [],
  deltas,
  ...(phi ? { phi } : {}),
  coalitions: [],
});
const step = (groups: StepRecord['groups']): StepRecord => ({
  version: 1,
  kind: 'train',
  step: 1,
  credit: {
    method: 'loo',
    replayMode: 'replan',
    replays: 2,
    success: 'em',
    placeholder: 'x',
    weights: { broadcast: 1, marginal: 1, tool: 0.1 } as StepRecord['credit']['weights'],
  },
  groupsTotal: groups.length,
  groups,
});

describe('plantedCredit', () => {
  it('splits worker calls by planted report and outcome, with their Delta and phi (hand-computed)', () => {
    const eps = [episode('a', true), episode('b', false)];
    const rec = step([
      {
        episodeId: 'a',
        question: '',
        answers: [],
        trajectories: [
          // failure: the planted report (Delta -1: masking it turned the failure into a success) and a right one (0)
          traj(0, ['1967.', '1962'], [-1, 0], [-0.5, 0.5]),
          // success: both right
          traj(1, ['1950', '1962'], [0.5, 1], [0.25, 0.75]),
        ],
      },
      // b has no claim: its '1967' is no planted report
      { episodeId: 'b', question: '', answers: [], trajectories: [traj(0, ['1967'], [0])] },
    ]);
    const r = plantedCredit([{ records: [rec], episodes: eps }]);
    expect(r.planted.failure).toEqual({ calls: 1, meanDelta: -1, negative: 1, positive: 0, meanPhi: -0.5 });
    expect(r.planted.success).toEqual({ calls: 0, meanDelta: 0, negative: 0, positive: 0, meanPhi: null });
    expect(r.other.failure).toEqual({ calls: 2, meanDelta: 0, negative: 0, positive: 0, meanPhi: 0.5 });
    expect(r.other.success).toEqual({ calls: 2, meanDelta: 0.75, negative: 0, positive: 2, meanPhi: 0.5 });
    // Two runs pool their calls: the same record twice doubles every count and keeps every mean.
    const two = plantedCredit([
      { records: [rec], episodes: eps },
      { records: [rec], episodes: eps },
    ]);
    expect(two.planted.failure).toEqual({ calls: 2, meanDelta: -1, negative: 2, positive: 0, meanPhi: -0.5 });
    expect(two.other.success).toEqual({ calls: 4, meanDelta: 0.75, negative: 0, positive: 4, meanPhi: 0.5 });
  });

  it('names a recorded episode that is missing', () => {
    expect(() =>
      plantedCredit([
        {
          records: [step([{ episodeId: 'zz', question: '', answers: [], trajectories: [] }])],
          episodes: [episode('a', true)],
        },
      ]),
    ).toThrow('plantedCredit: step 1 records episode zz, which is not among the episodes');
  });
});
