import { describe, expect, it } from 'vitest';
import { creditSection } from '../config/sections/credit.ts';
import { planReplays } from '../credit/plan.ts';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import { handEpisode } from '../../test/rollout-fixtures.ts';
import { plannedFor } from './units.ts';

describe('plannedFor (what a replay job carries)', () => {
  it("gives each trajectory's planned replays in plan order, repair substitutes included, as plain JSON", () => {
    const episode = handEpisode();
    const a = makeTrajectory({
      id: 'a',
      episodeId: episode.id,
      workers: [
        { subtask: 'Who founded Zorvex?', answer: 'Bob' },
        { subtask: 'In which year was Bob born?', answer: '1961' },
      ],
      finalAnswer: '1961',
    });
    const b = makeTrajectory({
      id: 'b',
      episodeId: episode.id,
      workers: [{ subtask: 'Who founded Zorvex?', answer: 'Alin Marek' }],
      finalAnswer: 'no',
    });
    const plan = planReplays(
      [a, b],
      episode,
      creditSection.parse({ method: 'loo', counterfactual: 'repair', replays: 1 }),
    );
    const pa = plannedFor(plan, 0);
    const pb = plannedFor(plan, 1);
    // a: v(N), then worker 0 left out (repaired to Alin Marek), then worker 1 (repaired to 1950); its
    // second delegation asked about Bob, not Alin Marek: replayed once more with the gold sub-question.
    expect(pa).toEqual([
      { masked: [], replica: 0 },
      { masked: [0], replica: 0, substitutes: [{ delegation: 0, report: 'Alin Marek' }] },
      { masked: [1], replica: 0, substitutes: [{ delegation: 1, report: '1950' }] },
      { masked: [], replica: 0, substitutes: [{ delegation: 1, subtask: 'In which year was Alin Marek born?' }] },
    ]);
    expect(pb).toEqual([
      { masked: [], replica: 0 },
      { masked: [0], replica: 0, substitutes: [{ delegation: 0, report: 'Alin Marek' }] },
    ]);
    expect(pa.length + pb.length).toBe(plan.items.length);
  });
});
