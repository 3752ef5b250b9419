import { describe, expect, it } from 'vitest';
import type { GroupRecord, TrajectoryRecord } from '../../credit/record.ts';
import { hasHarmful, keep } from './steps.ts';
import { replaySentence } from './trajectory.ts';

const traj = (id: string, success: number, deltas: number[]): TrajectoryRecord =>
  ({ id, success, deltas, coalitions: [] }) as unknown as TrajectoryRecord;
const group: GroupRecord = {
  episodeId: 'e',
  question: 'Who founded Acme?',
  answers: ['Ada'],
  trajectories: [traj('a', 1, [1, 0]), traj('b', 0, [0, -1]), traj('c', 0, [0])],
};
const none = { failed: false, harmful: false, question: '' };

describe('trajectory filters', () => {
  it('failed only, harmful worker, question substring (case-insensitive), combined', () => {
    expect(keep(group, none).map((t) => t.id)).toEqual(['a', 'b', 'c']);
    expect(keep(group, { ...none, failed: true }).map((t) => t.id)).toEqual(['b', 'c']);
    expect(keep(group, { ...none, harmful: true }).map((t) => t.id)).toEqual(['b']);
    expect(keep(group, { ...none, question: 'ACME' }).map((t) => t.id)).toEqual(['a', 'b', 'c']);
    expect(keep(group, { ...none, question: 'Peru' })).toEqual([]);
    expect(keep(group, { failed: true, harmful: true, question: 'founded' }).map((t) => t.id)).toEqual(['b']);
    expect(hasHarmful(traj('x', 0, [-1e-15]))).toBe(false);
  });

  it('the counterfactual sentence of a worker', () => {
    const t = {
      ...traj('t', 0, [0, -1]),
      coalitions: [
        { coalition: 3, members: [0, 1], masked: [], value: 0, answers: [{ answer: 'no', success: 0 }] },
        { coalition: 2, members: [1], masked: [0], value: 0, answers: [{ answer: null, success: 0 }] },
        {
          coalition: 1,
          members: [0],
          masked: [1],
          value: 1,
          answers: [
            { answer: 'Zhobrel', success: 1 },
            { answer: 'Lima', success: 1 },
          ],
        },
      ],
    } as TrajectoryRecord;
    expect(replaySentence(t, 1)).toBe(
      "without worker 1: 'Zhobrel', right; 'Lima', right (v = 1.00; Delta = -1.00, harmful)",
    );
    expect(replaySentence(t, 0)).toBe('without worker 0: no answer, wrong (v = 0.00; Delta = +0.00, neutral)');
    expect(replaySentence(t, 2)).toBeNull();
  });

  it('the likelihood value: v_lik in nats, scored, and the sequential gain of reading a report', () => {
    const coalitions = [
      { coalition: 3, members: [0, 1], masked: [], value: -0.5, answers: [] },
      { coalition: 2, members: [1], masked: [0], value: -0.25, answers: [] },
      { coalition: 1, members: [0], masked: [1], value: -4, answers: [] },
    ];
    const t = { ...traj('t', 1, [-0.25, 3.5]), coalitions, likelihood: {} } as TrajectoryRecord;
    expect(replaySentence(t, 0)).toBe('without worker 0: v_lik = -0.25 (Delta = -0.25 nats, harmful)');
    expect(replaySentence(t, 1)).toBe('without worker 1: v_lik = -4.00 (Delta = +3.50 nats, helpful)');
    const seq = { ...traj('s', 0, [2, -1]), likelihood: { readThrough: [-5, -3, -4] } } as TrajectoryRecord;
    expect(replaySentence(seq, 1)).toBe("reading worker 1's report: gold-answer log-likelihood -1.00 nats, harmful");
    expect(replaySentence(seq, 2)).toBeNull();
  });
});
