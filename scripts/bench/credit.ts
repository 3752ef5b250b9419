import * as tf from '@tensorflow/tfjs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { enableNativeKernels } from '../../src/backend/native/index.ts';
import { loadConfig } from '../../src/config/load.ts';
import type { Config } from '../../src/config/schema.ts';
import { generate, generationTotals, type GenerationTotals } from '../../src/generation/generate.ts';
import { hfConfigFor } from '../../src/model/config.ts';
import { BENCH_MODEL } from './model.ts';
import { median } from './median.ts';
import { prefixCacheStats, setPrefixCacheBytes, type PrefixCacheStats } from '../../src/generation/prefix-cache.ts';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { Rng } from '../../src/random/rng.ts';
import { loadTrainData } from '../../src/recipes/stages/train-data.ts';
import { rollout } from '../../src/rollout/engine.ts';
import { LmPolicy, samplingAt } from '../../src/rollout/lm-policy.ts';
import type { Policy, PolicyRequest, PolicyResponse } from '../../src/rollout/policy.ts';
import { Tokenizer } from '../../src/tokenizer/tokenizer.ts';
import { inProcessStages } from '../../src/recipes/stages/step-stages.ts';
import type { StepStages } from '../../src/train/grpo/types.ts';
import { batchAt, runGrpo } from '../../src/train/grpo/loop.ts';
import type { MetricRecord } from '../../src/train/metrics/jsonl.ts';
import type { BenchRow } from './types.ts';

/**
 * Credit section of `npm run bench` (`--only credit`): one RL step of configs/quickstart.yaml
 * (4 questions x 8 trajectories, rollout, counterfactual replays, credit, update) under broadcast,
 * LOO, Shapley and LOO over the gold answer's likelihood (no replays), with the KV prefix cache
 * (src/generation/prefix-cache.ts) off and on, in one process from the same starting policy. Prints
 * each arm's seconds and its ratio to broadcast with the same cache setting (in CPU seconds of this
 * process, which other processes' load changes far less than wall time; the wall seconds are printed
 * beside them), the credit stage's share of the step, prefill tokens computed against needed, and the
 * cache's hit rate; then how many tokens a multi-turn rollout computes per token it adds to the
 * conversations, and the rollout decode speed at batch 8 and 16.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** likelihood: LOO over the gold answer's likelihood (credit.value likelihood): no replays, K + 1 scored contexts. */
const METHODS = ['broadcast', 'loo', 'shapley', 'likelihood'] as const;

/** The credit section of an arm. */
function armCredit(base: Config['credit'], arm: (typeof METHODS)[number]): Config['credit'] {
  if (arm === 'likelihood') return { ...base, method: 'loo', counterfactual: 'mask', value: 'likelihood' };
  return { ...base, method: arm, value: 'outcome' };
}

interface Arm {
  /**
   * Wall-clock seconds of the step (collect + update), and the CPU seconds of this process over it (other processes'
   * load left out).
   */
  seconds: number;
  cpu: number;
  /** CPU seconds of the generating stages alone (rollout and counterfactual replays). */
  collectCpu: number;
  /** Seconds of the rollout, the replays and credit, and the update. */
  generate: number;
  credit: number;
  update: number;
  gen: GenerationTotals;
  cache: PrefixCacheStats | undefined;
}

function diff<T extends object>(a: T, b: T): T {
  return Object.fromEntries(
    Object.entries(b).map(([k, v]) => [k, (v as number) - ((a as Record<string, number>)[k] ?? 0)]),
  ) as T;
}

function cacheOn(cfg: Config, on: boolean): void {
  setPrefixCacheBytes(on ? cfg.rollout.prefixCacheMiB * 2 ** 20 : 0);
}

export async function rlStep(
  base: Config,
  method: (typeof METHODS)[number],
  on: boolean,
  tokenizer: Tokenizer,
  train: ReturnType<typeof loadTrainData>['train'],
): Promise<Arm> {
  const cfg: Config = { ...base, credit: armCredit(base.credit, method), train: { ...base.train, steps: 1 } };
  cacheOn(cfg, on);
  const runDir = await mkdtemp(join(tmpdir(), 'sharp-bench-credit-'));
  const g0 = generationTotals();
  const c0 = prefixCacheStats();
  let record: MetricRecord = {};
  const cpuNow = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  let cpu0 = 0;
  let cpu1 = 0;
  let cpu2 = 0;
  const inner = inProcessStages({ tokenizer, rollout: cfg.rollout, credit: cfg.credit });
  // The CPU clock read as the rollout starts and as the replays end (the step has one of each).
  const stages: StepStages = {
    begin: async (model, seeds) => {
      const run = await inner.begin(model, seeds);
      return {
        ...run,
        rollout: (episodes) => {
          cpu0 = cpuNow();
          return run.rollout(episodes);
        },
        runReplays: async (plans) => {
          const out = await run.runReplays(plans);
          cpu1 = cpuNow();
          return out;
        },
      };
    },
    close: () => inner.close(),
  };
  try {
    const res = await runGrpo({
      runDir,
      train: cfg.train,
      seed: cfg.run.seed,
      fullConfig: cfg,
      initialModel: () => CausalLM.load(resolve(ROOT, cfg.model.path)),
      data: train,
      stages,
      credit: cfg.credit,
      enc: tokenizer,
      padId: tokenizer.padId,
      maxTokens: cfg.rollout.maxContext,
      resume: false,
      progress: false,
      onStep: (_, m) => {
        cpu2 = cpuNow();
        record = m;
      },
    });
    res.model.dispose();
  } finally {
    await rm(runDir, { recursive: true, force: true });
  }
  const c1 = prefixCacheStats();
  const num = (k: string): number => (typeof record[k] === 'number' ? (record[k] as number) : Number.NaN);
  const seconds = num('perf/rollout_s') + num('perf/update_s');
  return {
    seconds,
    cpu: cpu2 - cpu0,
    collectCpu: cpu1 - cpu0,
    generate: num('perf/generate_s'),
    credit: num('perf/credit_s'),
    update: num('perf/update_s'),
    gen: diff(g0, generationTotals()),
    cache: c1 && c0 ? diff(c0, c1) : c1,
  };
}

/** A Policy that remembers, per agent, the length of its conversation after its latest turn. */
class ConversationLengths implements Policy {
  readonly last = new Map<string, number>();
  constructor(private readonly inner: Policy) {}
  async generate(reqs: PolicyRequest[]): Promise<PolicyResponse[]> {
    const out = await this.inner.generate(reqs);
    reqs.forEach((r, i) => {
      const g = out[i] as PolicyResponse;
      this.last.set(r.key, (g.promptTokens ?? 0) + g.tokenIds.length);
    });
    return out;
  }
}

/** Tokens a rollout of the step's questions runs through the model per token its conversations hold. */
async function multiTurn(
  cfg: Config,
  on: boolean,
  tokenizer: Tokenizer,
  train: ReturnType<typeof loadTrainData>['train'],
): Promise<{ computed: number; added: number; seconds: number }> {
  cacheOn(cfg, on);
  const model = await CausalLM.load(resolve(ROOT, cfg.model.path));
  try {
    const r = cfg.rollout;
    const policy = new ConversationLengths(
      new LmPolicy(model, tokenizer, {
        ...samplingAt(r.temperature, r),
        maxContext: r.maxContext,
        rng: new Rng(cfg.run.seed),
      }),
    );
    const g0 = generationTotals();
    const t0 = performance.now();
    await rollout(policy, batchAt(train, 0, cfg.train.batchQuestions, cfg.run.seed), { cfg: r, agents: r.agents });
    const seconds = (performance.now() - t0) / 1000;
    const g = diff(g0, generationTotals());
    return {
      computed: g.prefillTokens + g.decodeTokens,
      added: [...policy.last.values()].reduce((a, b) => a + b, 0),
      seconds,
    };
  } finally {
    model.dispose();
  }
}

/**
 * Rollout decoding of the bench model (scripts/bench/model.ts) at batch 8 and 16: a 64-token prompt,
 * then 64 sampled tokens; the median ms per decode step over 5 runs. scripts/torch-decode.py is its
 * PyTorch twin (run by hand).
 */
async function decodeSpeed(batch: number): Promise<number> {
  const model = CausalLM.random(hfConfigFor(BENCH_MODEL), 1);
  const decoder = { decode: (ids: readonly number[]): string => ids.join(' ') };
  try {
    const times: number[] = [];
    for (let r = 0; r < 6; r++) {
      const rng = new Rng(r);
      const reqs = Array.from({ length: batch }, () => ({
        promptIds: Array.from({ length: 64 }, () => rng.int(1, BENCH_MODEL.vocab - 1)),
        maxNewTokens: 64,
      }));
      let t0 = 0;
      let t1 = 0;
      const onStep = (step: number): void => {
        if (step === 1) t0 = performance.now();
        t1 = performance.now();
      };
      await generate(model, reqs, { temperature: 1, topK: 0, topP: 1, rng, eosIds: [], decoder, onStep });
      if (r > 0) times.push((t1 - t0) / 63); // the first run warms the kernels
    }
    return median(times);
  } finally {
    model.dispose();
  }
}

export async function benchCredit(quick = false): Promise<BenchRow[]> {
  if (tf.getBackend() === 'wasm' && process.env.SHARP_NATIVE !== '0') enableNativeKernels(); // as the CLI runs
  const cfg = loadConfig({ file: join(ROOT, 'configs/quickstart.yaml'), sets: [] });
  const data = loadTrainData(cfg.data);
  const tokenizer = await Tokenizer.load(resolve(ROOT, cfg.model.path));
  const rows: BenchRow[] = [];
  const row = (metric: string, value: number, unit: string, target?: string): void => {
    rows.push({ section: 'credit', metric, value, unit, ...(target ? { target } : {}) });
  };
  const before = tf.memory().numTensors;
  try {
    await rlStep(cfg, 'broadcast', false, tokenizer, data.train); // warm-up: kernels, tokenizer and prompt caches
    const settings = quick ? [true] : [false, true];
    // Off and on of one method run back to back, so that a change in the machine's load hits both alike.
    const results = new Map<string, Arm>();
    for (const method of METHODS)
      for (const on of settings) results.set(`${method} ${on}`, await rlStep(cfg, method, on, tokenizer, data.train));
    for (const on of settings) {
      const label = on ? 'cache on' : 'cache off';
      const arms = new Map(METHODS.map((m) => [m, results.get(`${m} ${on}`) as Arm]));
      const bArm = arms.get('broadcast') as Arm;
      for (const method of METHODS) {
        const a = arms.get(method) as Arm;
        const ratio = a.cpu / bArm.cpu;
        const collectRatio = a.collectCpu / bArm.collectCpu;
        const name = { loo: 'LOO', shapley: 'Shapley', broadcast: 'broadcast', likelihood: 'likelihood' }[method];
        const target = !on
          ? undefined
          : { loo: '<= 1.25', shapley: '<= 1.6', likelihood: '<= 1.3', broadcast: undefined }[method];
        console.log(
          `${name.padEnd(9)} ${label}: ${ratio.toFixed(2)}x broadcast (CPU ${a.cpu.toFixed(1)} s; rollout + ` +
            `replays alone ${collectRatio.toFixed(2)}x, CPU ${a.collectCpu.toFixed(1)} s); wall ` +
            `${a.seconds.toFixed(1)} s (rollout ${a.generate.toFixed(1)}, replays + credit ` +
            `${a.credit.toFixed(1)}, update ${a.update.toFixed(1)}; in generate() ${a.gen.seconds.toFixed(1)}); ` +
            `prefill ${a.gen.prefillTokens} of ${a.gen.promptTokens} prompt tokens computed, ` +
            `${a.gen.decodeTokens} decode` +
            (a.cache
              ? `; cache hits ${a.cache.hitTokens} of ${a.cache.neededTokens} tokens ` +
                `(${((100 * a.cache.hitTokens) / Math.max(1, a.cache.neededTokens)).toFixed(1)}%)`
              : ''),
        );
        row(`${name} RL step wall, ${label}`, a.seconds, 's');
        row(`${name} RL step CPU, ${label}`, a.cpu, 's');
        row(`${name} / broadcast (CPU), ${label}`, ratio, 'x', target);
        row(`${name} / broadcast, rollout + replays alone (CPU), ${label}`, collectRatio, 'x');
        row(`${name} replays + credit, ${label}`, a.credit, 's');
        // The credit stage's share of the step's seconds (replays or scoring, and assigning credit).
        row(
          `${name} credit stage / step seconds, ${label}`,
          (100 * a.credit) / a.seconds,
          '%',
          on && method === 'likelihood' ? '<= 10' : undefined,
        );
        row(`${name} prefill tokens computed, ${label}`, a.gen.prefillTokens, 'tokens');
        row(`${name} prefill tokens needed, ${label}`, a.gen.promptTokens, 'tokens');
        if (a.cache)
          row(`${name} cache hit rate, ${label}`, (100 * a.cache.hitTokens) / Math.max(1, a.cache.neededTokens), '%');
      }
    }
    for (const on of settings) {
      const m = await multiTurn(cfg, on, tokenizer, data.train);
      const label = on ? 'cache on' : 'cache off';
      console.log(
        `multi-turn rollout ${label}: ${m.computed} tokens computed for ${m.added} in the conversations ` +
          `(${(m.computed / m.added).toFixed(2)}x), ${m.seconds.toFixed(1)} s`,
      );
      row(`rollout tokens computed / tokens added, ${label}`, m.computed / m.added, 'x', on ? '<= 1.2' : undefined);
      row(`rollout seconds, ${label}`, m.seconds, 's');
    }
    for (const b of [8, 16]) {
      const ms = await decodeSpeed(b);
      console.log(
        `rollout decode, batch ${b}: ${ms.toFixed(2)} ms/step, ${((b * 1000) / ms).toFixed(0)} tok/s (PyTorch ` +
          `twin: scripts/torch-decode.py)`,
      );
      row(`rollout decode tokens/s, batch ${b}`, (b * 1000) / ms, 'tok/s');
    }
  } finally {
    setPrefixCacheBytes(0);
  }
  row('credit bench tensor leak', tf.memory().numTensors - before, 'tensors', '0');
  return rows;
}
