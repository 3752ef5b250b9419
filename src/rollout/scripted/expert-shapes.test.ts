import { afterAll, describe, expect, it } from 'vitest';
import type { Episode } from '../../data/episode.ts';
import { generateSynth } from '../../data/synth/generate.ts';
import { substituteRefs } from '../../data/synth/reader.ts';
import { plantedOf, toEpisode } from '../../data/synth/record.ts';
import { closeCodeSandbox } from '../../tools/code.ts';
import { rollout } from '../engine.ts';
import { rolloutConfig } from '../../../test/rollout-fixtures.ts';
import type { AgentRecord, Trajectory } from '../types.ts';
import { expertPolicy, messageGroups, NO_FAILURES, type ExpertFailures } from './expert.ts';

afterAll(async () => {
  await closeCodeSandbox();
});

const shapes = { comparison: 1, aggregation: 1 };
const episodes = generateSynth({ seed: 13, n: 200, shapes }).map(toEpisode);
const misled = generateSynth({ seed: 13, n: 200, shapes, misleadingRate: 1 }).map(toEpisode);
const limits = { maxDelegations: 6, maxPlannerTurns: 8 };

const workers = (t: Trajectory): AgentRecord[] => t.agents.filter((a) => a.role === 'worker');
const plannerCalls = (t: Trajectory) =>
  t.messages
    .filter((m) => m.agent === 0)
    .map((m) => m.toolCalls.length)
    .filter((n) => n > 0);
/** Hops a worker must answer: every hop but a comparison (the planner's own). */
const delegatedGold = (e: Episode) =>
  (e.decomposition ?? []).filter((h) => !/^(Who was born|Which company is)/.test(h.question)).map((h) => h.answer);
/** Lookups that need no other hop's answer. */
const independent = (e: Episode) => (e.decomposition ?? []).filter((h) => !/#\d/.test(h.question)).length;

/** |observed - p| within 4 binomial standard deviations (a false alarm ~ 1e-4). */
function expectRate(hits: number, n: number, p: number): void {
  expect(n).toBeGreaterThan(100);
  const sd = Math.sqrt((p * (1 - p)) / n);
  expect(Math.abs(hits / n - p)).toBeLessThan(4 * sd);
}

async function solve(eps: readonly Episode[], over: Record<string, unknown>, failures?: ExpertFailures) {
  const { trajectories } = await rollout(expertPolicy(failures ? { failures } : {}), eps, {
    cfg: rolloutConfig({ ...limits, ...over }),
    groupSize: 1,
  });
  return trajectories;
}

describe('scripted expert on comparisons and aggregations', () => {
  it('has both shapes, 2-3 independent lookups each, in the sample', () => {
    const types = new Set(episodes.map((e) => e.meta?.['hopType']));
    expect([...types].sort()).toEqual(['3hopagg', '3hopcmp', '4hopagg', '4hopcmp']);
    expect(new Set(episodes.map(independent))).toEqual(new Set([2, 3]));
  });

  for (const protocol of ['tags', 'json'] as const) {
    it(`solves 200/200 one delegation per message, the comparison itself (${protocol})`, async () => {
      const trajectories = await solve(episodes, { protocol });
      expect(
        trajectories
          .filter((t, i) => t.finalAnswer !== episodes[i]?.answers[0])
          .map((t) => `${t.episodeId}: ${t.finalAnswer}`),
      ).toEqual([]);
      trajectories.forEach((t, i) => {
        const ep = episodes[i] as Episode;
        expect(workers(t).map((a) => a.answer)).toEqual(delegatedGold(ep));
        expect(plannerCalls(t).every((n) => n === 1)).toBe(true);
        expect(t.messages.flatMap((m) => m.toolCalls).every((c) => c.valid)).toBe(true);
      });
    });

    it(`solves 200/200 with the independent lookups delegated side by side (${protocol})`, async () => {
      const trajectories = await solve(episodes, { protocol, maxParallelDelegations: 3 });
      expect(trajectories.filter((t, i) => t.finalAnswer !== episodes[i]?.answers[0]).map((t) => t.episodeId)).toEqual(
        [],
      );
      trajectories.forEach((t, i) => {
        const ep = episodes[i] as Episode;
        // Lookups that need no report go first, so the workers answer the hops in another order.
        expect(
          workers(t)
            .map((a) => a.answer)
            .sort(),
        ).toEqual(delegatedGold(ep).sort());
        // The first planner message carries every independent lookup (an item reached through one
        // more hop: its first lookup), then the lookup that needed a report, then the arithmetic.
        const calls = plannerCalls(t);
        expect(calls[0]).toBe(independent(ep));
        expect(calls.slice(1).every((n) => n === 1)).toBe(true);
        expect(calls.length).toBe(
          (ep.decomposition?.length ?? 0) -
            independent(ep) +
            1 -
            (ep.meta?.['hopType'] === '3hopcmp' || ep.meta?.['hopType'] === '4hopcmp' ? 1 : 0),
        );
        expect(calls.reduce((a, b) => a + b, 0)).toBe(delegatedGold(ep).length);
      });
    });
  }

  it('splits the lookups into messages of at most maxParallel', async () => {
    const three = episodes.filter((e) => independent(e) === 3).slice(0, 30);
    expect(three.length).toBe(30);
    const trajectories = await solve(three, { maxParallelDelegations: 2 });
    trajectories.forEach((t, i) => {
      expect(t.finalAnswer).toBe(three[i]?.answers[0]);
      expect(plannerCalls(t).slice(0, 2)).toEqual([2, 1]);
    });
    // A chain's hops each need the report before: one per message whatever the limit.
    const chain = [
      { question: 'Who founded A?', answer: 'B', id: 1, paragraphSupportIdx: 0 },
      { question: 'Where was #1 born?', answer: 'C', id: 2, paragraphSupportIdx: 1 },
    ];
    expect(
      messageGroups(
        [
          { kind: 'hop', hop: 0 },
          { kind: 'hop', hop: 1 },
        ],
        chain,
        4,
      ),
    ).toEqual([[0], [1]]);
    expect(
      messageGroups(
        [{ kind: 'irrelevant' }, { kind: 'hop', hop: 0 }, { kind: 'hop', hop: 0 }, { kind: 'hop', hop: 1 }],
        chain,
        4,
      ),
    ).toEqual([[0, 1, 2], [3]]);
  });

  it(
    'comparisons: calculate: the comparison hop is delegated last, decided by calculate (min for first, max for ' +
      'last), 200/200',
    async () => {
      const { trajectories } = await rollout(expertPolicy({ comparisons: 'calculate' }), episodes, {
        cfg: rolloutConfig({ ...limits, maxParallelDelegations: 3 }),
        groupSize: 1,
      });
      expect(trajectories.filter((t, i) => t.finalAnswer !== episodes[i]?.answers[0]).map((t) => t.episodeId)).toEqual(
        [],
      );
      let compared = 0;
      trajectories.forEach((t, i) => {
        const ep = episodes[i] as Episode;
        const hops = ep.decomposition ?? [];
        // Every hop is a worker's now, the comparison included, and its worker answers the item.
        expect(
          workers(t)
            .map((a) => a.answer)
            .sort(),
        ).toEqual(hops.map((h) => h.answer).sort());
        if (!/cmp$/.test(String(ep.meta?.['hopType']))) return;
        compared++;
        const last = workers(t).at(-1) as AgentRecord;
        expect(last.answer).toBe(ep.answers[0]);
        const calc = t.messages.filter((m) => m.agent === last.id).flatMap((m) => m.toolCalls);
        expect(calc.map((c) => c.name)).toEqual(['calculate']);
        const years = hops
          .slice(0, -1)
          .map((h) => h.answer)
          .filter((a) => /^\d+$/.test(a));
        const fn = /first|older/.test(ep.question) ? 'argmin' : 'argmax';
        expect(calc[0]?.args).toMatch(new RegExp(`^${fn}\\(`));
        // Each item's name in quotes, then its year: the years in the question's order.
        expect([...(calc[0]?.args ?? '').matchAll(/'[^']+', (\d+)/g)].map((m) => m[1]).sort()).toEqual(years.sort());
      });
      expect(compared).toBeGreaterThan(50);
      // The lone agent decides them the same way.
      const single = (
        await rollout(expertPolicy({ agents: 'single', comparisons: 'calculate' }), episodes, {
          cfg: rolloutConfig(limits),
          groupSize: 1,
          agents: 'single',
        })
      ).trajectories;
      expect(single.filter((t, i) => t.finalAnswer !== episodes[i]?.answers[0]).map((t) => t.episodeId)).toEqual([]);
      single.forEach((t, i) => {
        const calcs = t.messages.flatMap((m) => m.toolCalls).filter((c) => c.name === 'calculate');
        expect(calcs).toHaveLength(1);
        if (/cmp$/.test(String(episodes[i]?.meta?.['hopType'])))
          expect(calcs[0]?.args).toMatch(/^arg(min|max)\(('[^']+', \d+(, )?)+\)$/);
      });
    },
  );

  it('single agent: looks every item up itself and compares without a tool (200/200)', async () => {
    const { trajectories } = await rollout(expertPolicy({ agents: 'single' }), misled, {
      cfg: rolloutConfig(limits),
      groupSize: 1,
      agents: 'single',
    });
    expect(trajectories.filter((t, i) => t.finalAnswer !== misled[i]?.answers[0]).map((t) => t.episodeId)).toEqual([]);
    trajectories.forEach((t, i) => {
      const calls = t.messages.flatMap((m) => m.toolCalls);
      // One search per lookup (two when the first results miss), one calculate per aggregation.
      expect(calls.filter((c) => c.name === 'calculate')).toHaveLength(
        /agg$/.test(String(misled[i]?.meta?.['hopType'])) ? 1 : 0,
      );
      expect(calls.filter((c) => c.name === 'search').length).toBeGreaterThanOrEqual(
        delegatedGold(misled[i] as Episode).length - (/agg$/.test(String(misled[i]?.meta?.['hopType'])) ? 1 : 0),
      );
    });
  });

  it('passes over planted claims: 200/200 with a rumour in every episode', async () => {
    expect(misled.every((e) => plantedOf(e) !== null)).toBe(true);
    for (const over of [{}, { maxParallelDelegations: 3 }]) {
      const trajectories = await solve(misled, over, NO_FAILURES);
      expect(trajectories.filter((t, i) => t.finalAnswer !== misled[i]?.answers[0]).map((t) => t.episodeId)).toEqual(
        [],
      );
    }
  });

  it('a trusting worker reports the planted claim whenever it is shown, at the configured rate', async () => {
    const many = generateSynth({
      seed: 14,
      n: 2000,
      shapes: { chain: 1, comparison: 1, aggregation: 1 },
      misleadingRate: 0.6,
    }).map(toEpisode);
    const failures: ExpertFailures = { ...NO_FAILURES, trustPlanted: 0.3, redundant: 0.2, seed: 3 };
    const trajectories = await solve(many, { maxParallelDelegations: 3 }, failures);
    let shown = 0;
    let trusted = 0;
    let unseenWrong = 0;
    let redundant = 0;
    trajectories.forEach((t, i) => {
      const ep = many[i] as Episode;
      const subtasks = workers(t).map((w) => w.subtask);
      if (new Set(subtasks).size < subtasks.length) redundant++;
      const claim = plantedOf(ep);
      if (!claim) return;
      const gold = (ep.decomposition ?? []).map((h) => h.answer);
      const asked = substituteRefs((ep.decomposition?.[claim.hop] as { question: string }).question, gold);
      for (const w of workers(t)) {
        if (w.subtask !== asked) continue;
        const saw = t.messages
          .filter((m) => m.agent === w.id)
          .flatMap((m) => m.toolCalls)
          .some((c) => c.retrievedIdx?.includes(claim.paragraphIdx));
        if (!saw) {
          if (w.answer === claim.wrong) unseenWrong++;
          continue;
        }
        shown++;
        if (w.answer === claim.wrong) trusted++;
        else expect(w.answer).toBe(claim.right);
      }
    });
    expectRate(trusted, shown, 0.3);
    expect(unseenWrong).toBe(0);
    expectRate(redundant, trajectories.length, 0.2);
    // The planted paragraph is shown to most workers asked the planted fact.
    expect(shown).toBeGreaterThan(0.5 * trajectories.filter((_, i) => plantedOf(many[i] as Episode)).length);
  }, 120_000);
});
