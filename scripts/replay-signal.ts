import { parseArgs } from 'node:util';
import { initBackend } from '../src/backend/select.ts';
import { enableNativeKernels } from '../src/backend/native/register.ts';
import { loadConfig } from '../src/config/load.ts';
import { computeCredits } from '../src/credit/compute.ts';
import { engineReplayRunner } from '../src/credit/engine-adapters.ts';
import { creditReport, type TrajectoryCreditSummary } from '../src/credit/report.ts';
import { CausalLM } from '../src/model/causal-lm.ts';
import { Rng } from '../src/random/rng.ts';
import { loadTrainData } from '../src/recipes/stages/train-data.ts';
import { rollout } from '../src/rollout/engine.ts';
import { LmPolicy, samplingAt } from '../src/rollout/lm-policy.ts';
import { Tokenizer } from '../src/tokenizer/tokenizer.ts';
import { closeCodeSandbox } from '../src/tools/code.ts';

/**
 * `npm run bench:replays`: how much of the leave-one-out credit is signal, per number of replays n
 * and replay temperature, on the shipped starting policy and the ablation's training questions.
 * One rollout (Q questions x G trajectories), then for each setting the LOO Deltas of every worker
 * call twice, from two independent bases of common random numbers. Printed per setting:
 * - reliability: the correlation of the two Delta estimates (split-half; 1 = no replay noise);
 * - the replay noise floor (full-coalition replays that disagree with the recorded outcome);
 * - the share of worker calls with non-zero Delta in successes and in failures;
 * - replay items and seconds per estimate (the cost).
 * Used to choose credit.replays (docs/results.md). Not a test: minutes of CPU.
 *
 * Flags: --config (configs/ablation.yaml), --questions Q (32), --replays 1,2,4, --temperatures 1,0,
 * --set key=value (repeatable, as `sharp train --set`; e.g. credit.counterfactual=resample).
 */
const { values } = parseArgs({
  options: {
    config: { type: 'string', default: 'configs/ablation.yaml' },
    questions: { type: 'string', default: '32' },
    replays: { type: 'string', default: '1,2,4' },
    temperatures: { type: 'string', default: '1,0' },
    seed: { type: 'string', default: '11' },
    set: { type: 'string', multiple: true, default: [] },
  },
});

function corr(x: readonly number[], y: readonly number[]): number {
  const n = x.length;
  const mx = x.reduce((a, b) => a + b, 0) / n;
  const my = y.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += ((x[i] as number) - mx) * ((y[i] as number) - my);
    sxx += ((x[i] as number) - mx) ** 2;
    syy += ((y[i] as number) - my) ** 2;
  }
  return sxx === 0 || syy === 0 ? Number.NaN : sxy / Math.sqrt(sxx * syy);
}

async function main(): Promise<void> {
  const cfg = loadConfig({ file: values.config, sets: ['credit.method=loo', ...values.set] });
  await initBackend(cfg.run.backend, cfg.run.threads);
  const native = enableNativeKernels();
  const data = loadTrainData(cfg.data);
  const seed = Number(values.seed);
  const episodes = new Rng(seed).shuffle(data.train).slice(0, Number(values.questions));
  const tokenizer = await Tokenizer.load(cfg.model.path);
  const model = await CausalLM.load(cfg.model.path);
  const r = cfg.rollout;
  const engine = { cfg: r, agents: r.agents };
  const t0 = performance.now();
  const policy = new LmPolicy(model, tokenizer, {
    ...samplingAt(r.temperature, r),
    maxContext: r.maxContext,
    rng: new Rng(seed),
  });
  const run = await rollout(policy, episodes, engine);
  const rolloutS = (performance.now() - t0) / 1000;
  console.log(
    `replay signal: ${episodes.length} questions x ${r.groupSize} trajectories (${run.trajectories.length}) in ` +
      `${rolloutS.toFixed(1)} s; kernels ${native.mode}; replay mode ${cfg.credit.replayMode}, counterfactual ` +
      `${cfg.credit.counterfactual}`,
  );
  console.log(
    '| replays n | temperature | reliability (split-half r) | noise floor | non-zero Delta in successes | in ' +
      'failures | replay items | seconds per estimate |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const temperature of values.temperatures.split(',').map(Number)) {
    for (const n of values.replays.split(',').map(Number)) {
      if (temperature === 0 && n > 1) continue; // greedy replays are exact: one is all there is
      const c = { ...cfg.credit, replays: n };
      const replayPolicy = new LmPolicy(model, tokenizer, {
        ...samplingAt(temperature, r),
        maxContext: r.maxContext,
        rng: new Rng(seed + 1),
      });
      const estimates: number[][] = [];
      // The first estimate's credit summaries give the noise floor and the non-zero shares (credit/report.ts).
      const summaries: TrajectoryCreditSummary[] = [];
      let items = 0;
      let seconds = 0;
      for (const base of [1001, 2002]) {
        const runner = engineReplayRunner(replayPolicy, engine, {
          replayMode: c.replayMode,
          placeholder: c.placeholder,
          streamSeed: base,
        });
        const deltas: number[] = [];
        const t1 = performance.now();
        for (const e of episodes) {
          const res = await computeCredits(
            run.trajectories.filter((t) => t.episodeId === e.id),
            e,
            runner,
            c,
          );
          for (const t of res.trajectories) deltas.push(...t.deltas);
          items += res.stats.replayItems;
          if (base === 1001) summaries.push(...res.trajectories);
        }
        seconds += (performance.now() - t1) / 1000;
        estimates.push(deltas);
      }
      const rep = creditReport(summaries, []);
      const pct = (x: number | null): string => (x === null ? '-' : `${(100 * x).toFixed(1)}%`);
      console.log(
        `| ${n} | ${temperature} | ${corr(estimates[0] as number[], estimates[1] as number[]).toFixed(3)} | ` +
          `${pct(rep.noiseFloor)} | ${pct(rep.nonzeroInSuccess)} | ${pct(rep.nonzeroInFailure)} | ${items / 2} | ` +
          `${(seconds / 2).toFixed(1)} |`,
      );
    }
  }
  model.dispose();
  await closeCodeSandbox();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
