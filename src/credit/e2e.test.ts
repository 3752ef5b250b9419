import { afterAll, describe, expect, it } from 'vitest';
import { creditSection } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { generateSynth } from '../data/synth/generate.ts';
import { toEpisode } from '../data/synth/record.ts';
import { requestMeta, rollout } from '../rollout/engine.ts';
import { PROTOCOLS, getProtocol } from '../rollout/protocol/index.ts';
import { EXPERT_UNKNOWN, type ExpertStep, expertText, insertStep } from '../rollout/scripted/expert.ts';
import { ScriptedPolicy } from '../rollout/scripted/policy.ts';
import { rolloutConfig } from '../../test/rollout-fixtures.ts';
import type { Trajectory } from '../rollout/types.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { computeCredits } from './compute.ts';
import { engineContextOf, engineReplayRunner, policyResampler } from './engine-adapters.ts';
import { locateFirstError } from './first-error.ts';
import { createJudge } from './judges/index.ts';

/**
 * Credit end to end: real synthetic episode, real engine, tools and replay API, the
 * scripted expert. The expert's planner answers the latest report of the last hop; here its final
 * answer also requires a usable report for EVERY hop (reports equal to the placeholder or to the
 * expert's "unknown" carry no answer and are skipped, the latest usable one is trusted). Without
 * that, replays that keep later reports fixed could never show a first hop's
 * worker as needed: the last report alone decides the answer.
 */
const PLACEHOLDER = '[no report]';

function chainExpert(steps: (e: Episode) => ExpertStep[]): ScriptedPolicy {
  return new ScriptedPolicy((req) => {
    const text = expertText(req, { steps, trust: 'latest' });
    const meta = requestMeta(req);
    const p = PROTOCOLS[meta.protocol];
    if (meta.role !== 'planner' || p.parse(text).kind !== 'answer') return text;
    const plan = steps(meta.episode);
    const hopCount = meta.episode.decomposition?.length ?? 0;
    const known: (string | undefined)[] = Array.from({ length: hopCount }, () => undefined);
    meta.results
      .filter((r) => r.name === 'delegate')
      .forEach((r, k) => {
        const s = plan[k];
        if (s?.kind === 'hop' && r.output !== PLACEHOLDER && r.output !== EXPERT_UNKNOWN) known[s.hop] = r.output;
      });
    const complete = hopCount > 0 && known.every((a) => a !== undefined);
    return p.formatAnswer(complete ? (known[hopCount - 1] as string) : EXPERT_UNKNOWN);
  });
}

afterAll(async () => {
  await closeCodeSandbox();
});

const episode = generateSynth({ seed: 7, n: 40 })
  .map(toEpisode)
  .find((e) => e.decomposition?.length === 2 && e.meta?.['arithmetic'] !== true);
if (!episode) throw new Error('no plain 2-hop synthetic episode');
const ep: Episode = episode;
const rcfg = rolloutConfig({ maxDelegations: 6, maxPlannerTurns: 8 });
const engine = { cfg: rcfg };

async function run(policy: ScriptedPolicy): Promise<Trajectory> {
  const { trajectories } = await rollout(policy, [ep], { cfg: rcfg, groupSize: 1 });
  return trajectories[0];
}

describe('SHARP credit end to end (real engine, replays, scripted expert)', () => {
  for (const mode of ['final', 'replan'] as const) {
    it(
      `(a) success: needed workers +1, irrelevant 0, planner mean of positives; redundant pair LOO 0, Shapley ` +
        `split [${mode}]`,
      async () => {
        // hop 0, irrelevant subtask, hop 1
        const steps = insertStep(1, { kind: 'irrelevant' });
        const policy = chainExpert(steps);
        const traj = await run(policy);
        expect(traj.finalAnswer).toBe(ep.answers[0]);
        const cfg = creditSection.parse({ method: 'loo', replayMode: mode, placeholder: PLACEHOLDER, replays: 1 });
        const runner = engineReplayRunner(policy, engine, { ...cfg, streamSeed: 1 });
        const r = await computeCredits([traj], ep, runner, cfg);
        // worker delegations: 0 = hop 0, 1 = irrelevant, 2 = hop 1
        expect(r.trajectories[0].deltas).toEqual([1, 0, 1]);
        expect(r.trajectories[0].plannerMarginal).toBeCloseTo(2 / 3, 15); // (1 + 0 + 1) / 3
        const planner = r.credits.find((c) => c.role === 'planner');
        // 0.9 * 1 + 0.9 * 2/3 + 0.1 * 1 (3 valid delegations) = 1.6
        expect(planner?.total).toBeCloseTo(1.6, 12);
        expect(r.report).toMatchObject({ workerCalls: 3, helpful: 2 / 3, neutral: 1 / 3, harmful: 0 });

        // hop 0 delegated twice (redundant pair), then hop 1
        const twiceSteps = insertStep(1, { kind: 'hop', hop: 0 });
        const twicePolicy = chainExpert(twiceSteps);
        const twice = await run(twicePolicy);
        expect(twice.finalAnswer).toBe(ep.answers[0]);
        const loo = await computeCredits(
          [twice],
          ep,
          engineReplayRunner(twicePolicy, engine, { ...cfg, streamSeed: 1 }),
          cfg,
        );
        // final: only the answer is rewritten, and it needs one report of each hop: the pair is redundant.
        // replan: the planner rewrites hop 1's subtask from the latest hop-0 report, so with worker 1
        // masked it asks about the placeholder, the worker that runs on that subtask cannot answer it,
        // and the trajectory fails: worker 1 is needed after all, worker 0 is not.
        expect(loo.trajectories[0].deltas).toEqual(mode === 'final' ? [0, 0, 1] : [0, 1, 1]);
        const scfg = creditSection.parse({ method: 'shapley', replayMode: mode, placeholder: PLACEHOLDER, replays: 1 });
        const batchesBefore = twicePolicy.batches.length;
        const sh = await computeCredits(
          [twice],
          ep,
          engineReplayRunner(twicePolicy, engine, { ...scfg, streamSeed: 1 }),
          scfg,
        );
        // one engine run for all 8 coalitions (N replayed too): in final mode a single generate call with 8 requests
        if (mode === 'final') expect(twicePolicy.batches.slice(batchesBefore)).toEqual([8]);
        // final: v(S) = 1 iff worker 2 and (worker 0 or 1) report: phi = (1/6, 1/6, 2/3);
        // replan: v(S) = 1 iff workers 1 and 2 report: phi = (0, 1/2, 1/2); sum = v(N) - v(empty) = 1
        const phi = sh.trajectories[0].phi ?? [];
        const want = mode === 'final' ? [1 / 6, 1 / 6, 2 / 3] : [0, 1 / 2, 1 / 2];
        want.forEach((x, m) => expect(phi[m]).toBeCloseTo(x, 12));
        expect(sh.report.maxEfficiencyResidual).toBeLessThan(1e-12);
        expect(sh.stats.replayItems).toBe(8); // 2^3 coalitions, N included, one batched run
        expect(sh.trajectories[0].noise).toBe(0); // the expert is deterministic: replaying N gives the recorded outcome
      },
    );
  }

  it('(b) failure: the saboteur of the last hop gets -1 and is named as the first error; DPO pair from a resample', async () => {
    // hop 0, hop 1 (correct), hop 1 again by a saboteur; the planner trusts the latest report.
    const steps = insertStep(2, { kind: 'hop', hop: 1, sabotage: 'Nobody Atall' });
    const policy = chainExpert(steps);
    const traj = await run(policy);
    expect(traj.finalAnswer).toBe('Nobody Atall');
    const cfg = creditSection.parse({
      method: 'loo',
      replayMode: 'final',
      placeholder: PLACEHOLDER,
      failurePairs: true,
      messageLevel: true,
    });
    const protocol = getProtocol(rcfg.protocol);
    const judge = createJudge(cfg, { protocol });
    // Resampling the saboteur's report from the same context: the honest expert answers at once
    // when the subtask's answer is already known to it; its report comes from a real rollout.
    const honest = chainExpert(insertStep(2, { kind: 'hop', hop: 1 }));
    const honestTraj = await run(honest);
    const honestReport =
      honestTraj.messages
        .filter((m) => m.agent === honestTraj.agents.find((a) => a.delegation === 2)?.id && m.chatRole === 'assistant')
        .at(-1)?.text ?? '';
    const knowing = new ScriptedPolicy((req) =>
      requestMeta(req).delegation === 2 ? honestReport : expertText(req, { steps }),
    );
    const resampled: number[] = [];
    const resample = policyResampler(knowing, protocol, rcfg.maxNewTokens);
    const r = await computeCredits([traj], ep, engineReplayRunner(policy, engine, { ...cfg, streamSeed: 1 }), cfg, {
      judge,
      contextOf: engineContextOf,
      resample: async (reqs) => {
        resampled.push(...reqs.map((q) => q.index));
        return resample(reqs);
      },
    });
    expect(r.trajectories[0].deltas).toEqual([0, 0, -1]); // masking the saboteur turns failure into success
    const replanCfg = creditSection.parse({ method: 'loo', replayMode: 'replan', placeholder: PLACEHOLDER });
    expect(
      (await computeCredits([traj], ep, engineReplayRunner(policy, engine, { ...replanCfg, streamSeed: 1 }), replanCfg))
        .trajectories[0].deltas,
    ).toEqual([0, 0, -1]);
    const saboteur = traj.agents.find((a) => a.delegation === 2);
    const report = traj.messages.filter((m) => m.agent === saboteur?.id && m.chatRole === 'assistant').at(-1);
    const first = r.trajectories[0].firstError;
    expect(first?.index).toBe(report?.index);
    expect(first?.agent).toBe(saboteur?.id);
    const t = traj.messages.filter((m) => m.chatRole === 'assistant').length;
    expect(first?.judgeCalls).toBeLessThanOrEqual(Math.ceil(Math.log2(t)) + 1);
    // same answer by a direct call
    expect((await locateFirstError({ traj, episode: ep }, judge)).index).toBe(report?.index);
    expect(r.pairs).toHaveLength(1);
    expect(resampled).toEqual([report?.index]); // repaired in the first round
    expect(r.pairs[0].rejected).toBe(report?.text);
    expect(protocol.parse(r.pairs[0].chosen)).toEqual({ kind: 'answer', text: ep.decomposition?.[1].answer });
    expect(r.pairs[0].prefix[0].role).toBe('system');
    // message level: only the saboteur's report is blamed; its agent's credit is conserved
    const sab = r.messageRewards.filter((m) => m.agent === saboteur?.id);
    expect(sab.map((m) => m.label)).toEqual([-1]); // the saboteur wrote one message: its report
    expect(r.messageRewards.filter((m) => m.label === -1).map((m) => m.messageIndex)).toEqual([report?.index]);
    const credit = r.credits.find((c) => c.agent === saboteur?.id);
    expect(sab.reduce((s, m) => s + m.reward, 0)).toBeCloseTo(credit?.total ?? NaN, 9);
    expect(credit?.parts.marginal).toBe(-1);
    // 0.9 * 0 + 0.9 * -1 + 0.1 * 0 (no tool calls, noToolCallsValue 0) = -0.9, all on its one message
    expect(sab[0].reward).toBeCloseTo(-0.9, 12);
    // the worker that answered hop 1 correctly before the saboteur is not blamed
    const correct = traj.agents.find((a) => a.delegation === 1);
    expect(r.messageRewards.filter((m) => m.agent === correct?.id).every((m) => m.label === 0)).toBe(true);
  });
});
