import { describe, expect, it } from 'vitest';
import type { ReplayItem } from '../../credit/counterfactual.ts';
import { makeTrajectory } from '../../../test/credit-fixtures.ts';
import { comparisonEpisode } from '../../../test/planted-fixtures.ts';
import type { Trajectory } from '../../rollout/types.ts';
import { batchedRunner } from './batched-runner.ts';

const episode = comparisonEpisode('ep');
const item = (id: string, replica: number): ReplayItem => ({
  traj: makeTrajectory({ id, workers: [], finalAnswer: null }),
  episode,
  masked: [],
  replica,
});
/**
 * A runner whose replay of an item answers `${trajectory id}#${replica}`, recording its batches and how many ran at
 * once.
 */
function recordingRunner(): {
  run: (items: ReplayItem[]) => Promise<Trajectory[]>;
  batches: string[][];
  maxConcurrent: number;
} {
  const rec = { batches: [] as string[][], maxConcurrent: 0, running: 0 };
  const run = async (items: ReplayItem[]): Promise<Trajectory[]> => {
    rec.running++;
    rec.maxConcurrent = Math.max(rec.maxConcurrent, rec.running);
    rec.batches.push(items.map((it) => `${it.traj.id}#${it.replica}`));
    await new Promise((r) => setTimeout(r, 5));
    rec.running--;
    return items.map((it) => ({ ...it.traj, finalAnswer: `${it.traj.id}#${it.replica}` }));
  };
  return Object.assign(rec, { run });
}

describe('batchedRunner', () => {
  it('serves the calls of one tick with one run, each call its own results in order', async () => {
    const rec = recordingRunner();
    const runner = batchedRunner(rec.run);
    const out = await Promise.all([
      runner([item('a', 0), item('a', 1)]),
      runner([item('b', 0)]),
      runner([item('c', 0), item('c', 1), item('c', 2)]),
    ]);
    expect(rec.batches).toEqual([['a#0', 'a#1', 'b#0', 'c#0', 'c#1', 'c#2']]);
    expect(out.map((ts) => ts.map((t) => t.finalAnswer))).toEqual([['a#0', 'a#1'], ['b#0'], ['c#0', 'c#1', 'c#2']]);
  });

  it('a call made while a batch runs waits for it: one run at a time', async () => {
    const rec = recordingRunner();
    const runner = batchedRunner(rec.run);
    const first = runner([item('a', 0)]);
    await new Promise((r) => setTimeout(r, 1)); // the first batch is running now
    const second = Promise.all([runner([item('b', 0)]), runner([item('c', 0)])]);
    expect((await first).map((t) => t.finalAnswer)).toEqual(['a#0']);
    expect((await second).map((ts) => ts[0]?.finalAnswer)).toEqual(['b#0', 'c#0']);
    expect(rec.batches).toEqual([['a#0'], ['b#0', 'c#0']]);
    expect(rec.maxConcurrent).toBe(1);
  });

  it('a failed run rejects every call of its batch, and the next batch still runs', async () => {
    let calls = 0;
    const runner = batchedRunner((items) =>
      calls++ === 0 ? Promise.reject(new Error('engine failed')) : Promise.resolve(items.map((it) => it.traj)),
    );
    const failed = await Promise.allSettled([runner([item('a', 0)]), runner([item('b', 0)])]);
    expect(failed.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'ok'))).toEqual([
      'engine failed',
      'engine failed',
    ]);
    expect((await runner([item('c', 0)])).map((t) => t.id)).toEqual(['c']);
  });

  it('names a runner that returns the wrong number of replays', async () => {
    const runner = batchedRunner(() => Promise.resolve([]));
    await expect(runner([item('a', 0)])).rejects.toThrow('replay runner returned 0 trajectories for 1 items');
  });
});
