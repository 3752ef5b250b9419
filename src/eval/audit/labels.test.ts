import { describe, expect, it } from 'vitest';
import { successFunction } from '../../credit/success.ts';
import { comparisonEpisode, plantedClaim } from '../../../test/planted-fixtures.ts';
import { makeTrajectory } from '../../../test/credit-fixtures.ts';
import { labelWorkerCalls } from './labels.ts';

const match = successFunction('em', { f1Threshold: 0.5 });
const opts = { hopMatchF1: 0.5, match };
// Ada Brin was born in 1950, Bo Cade in 1962; the planted claim says Ada Brin was born in 1967.
const episode = comparisonEpisode('ep', plantedClaim('1967', '1950'));

describe('labelWorkerCalls', () => {
  it('right / wrong by the hop the subtask asks, planted, unjudged, the outcome (hand-labelled)', () => {
    const traj = makeTrajectory({
      id: 'ep/0',
      workers: [
        { subtask: 'In what year was Ada Brin born?', answer: '1967' }, // hop 0, the rumour: wrong and planted
        { subtask: 'In what year was Bo Cade born?', answer: '1962.' }, // hop 1, right (EM after normalising)
        { subtask: 'Tell me about the weather', answer: 'sunny' }, // asks no hop: unjudged
        { subtask: 'In what year was Bo Cade born?', answer: null }, // hop 1, no report: wrong, not planted
      ],
      finalAnswer: 'Bo Cade',
    });
    const calls = labelWorkerCalls(traj, episode, 7, opts);
    expect(calls.map((c) => [c.delegation, c.hop, c.right, c.planted, c.reference])).toEqual([
      [0, 0, false, true, '1950'],
      [1, 1, true, false, '1962'],
      [2, null, null, false, null],
      [3, 1, false, false, '1962'],
    ]);
    // The team answered Bo Cade; the gold answer is Ada Brin.
    expect(
      calls.every(
        (c) => c.success === false && c.trajectory === 7 && c.trajectoryId === 'ep/0' && c.episodeId === 'ep',
      ),
    ).toBe(true);
  });

  it('a success, and an episode without a planted claim: nothing is planted', () => {
    const traj = makeTrajectory({
      id: 'ep/1',
      workers: [{ subtask: 'In what year was Ada Brin born?', answer: '1967' }],
      finalAnswer: 'Ada Brin',
    });
    const calls = labelWorkerCalls(traj, comparisonEpisode('ep'), 0, opts);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ success: true, right: false, planted: false, report: '1967' });
  });

  it('no worker calls: no labels', () => {
    expect(
      labelWorkerCalls(makeTrajectory({ id: 'ep/2', workers: [], finalAnswer: 'Ada Brin' }), episode, 0, opts),
    ).toEqual([]);
  });

  it('an episode without a decomposition is a one-line user error', () => {
    const traj = makeTrajectory({
      id: 'bare/0',
      episodeId: 'bare',
      workers: [{ subtask: 'x', answer: 'y' }],
      finalAnswer: 'y',
    });
    expect(() => labelWorkerCalls(traj, { ...comparisonEpisode('bare'), decomposition: undefined }, 0, opts)).toThrow(
      /the credit audit needs a gold decomposition/,
    );
  });
});
